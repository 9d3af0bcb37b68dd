// gradcheck cases for autograd/ops/shape.cpp and autograd/ops/reductions.cpp.
#include "autograd/ops.hpp"
#include "tools/gradcheck/op_cases.hpp"

namespace attend::tools {

namespace {
Tensor randn(const Shape& shape, std::uint64_t seed) {
  Generator gen(seed);
  return normal(shape, 0.0, 1.0, gen, Float64).requires_grad_();
}

// One case: fn applied to fresh random inputs of the given shapes.
void add_case(std::vector<OpCase>& cases, const char* op, const char* name, std::vector<Shape> shapes,
              SingleOutputFn fn) {
  cases.push_back({op, name, [shapes = std::move(shapes), fn = std::move(fn)] {
                     std::vector<Tensor> inputs;
                     std::uint64_t seed = 20;
                     for (const Shape& s : shapes) inputs.push_back(randn(s, seed++));
                     return gradcheck(fn, inputs);
                   }});
}
}  // namespace

void add_shape_cases(std::vector<OpCase>& cases) {
  using In = const std::vector<Tensor>&;
  add_case(cases, "transpose", "(3, 4) axes 0, 1", {{3, 4}}, [](In in) { return transpose(in[0], 0, 1); });
  add_case(cases, "transpose", "(2, 3, 4) axes 0, 2", {{2, 3, 4}}, [](In in) { return transpose(in[0], 0, 2); });
  add_case(cases, "transpose", "(2, 3, 4) axes -1, -2", {{2, 3, 4}}, [](In in) { return transpose(in[0], -1, -2); });
  add_case(cases, "transpose", "(2, 3, 2, 4) axes 1, 3", {{2, 3, 2, 4}}, [](In in) { return transpose(in[0], 1, 3); });

  add_case(cases, "reshape", "(3, 4) -> (2, 6)", {{3, 4}}, [](In in) { return reshape(in[0], {2, 6}); });
  add_case(cases, "reshape", "() -> (1, 1)", {Shape{}}, [](In in) { return reshape(in[0], {1, 1}); });
  add_case(cases, "reshape", "used twice: r(x) * r(x)", {{2, 3}},
           [](In in) { return mul(reshape(in[0], {6}), reshape(in[0], {6})); });

  add_case(cases, "concat", "(2, 3) + (4, 3) axis 0", {{2, 3}, {4, 3}},
           [](In in) { return concat({in[0], in[1]}, 0); });
  add_case(cases, "concat", "three on the middle axis", {{2, 1, 3}, {2, 2, 3}, {2, 3, 3}},
           [](In in) { return concat({in[0], in[1], in[2]}, 1); });
  add_case(cases, "concat", "(2, 3, 2) + (2, 3, 4) axis -1", {{2, 3, 2}, {2, 3, 4}},
           [](In in) { return concat({in[0], in[1]}, -1); });
  add_case(cases, "concat", "the same tensor twice", {{3}}, [](In in) { return concat({in[0], in[0]}, 0); });

  add_case(cases, "slice", "(4, 3) axis 0 [1, 3)", {{4, 3}}, [](In in) { return slice(in[0], 0, 1, 3); });
  add_case(cases, "slice", "(2, 4, 3) axis 1 [0, 2)", {{2, 4, 3}}, [](In in) { return slice(in[0], 1, 0, 2); });
  add_case(cases, "slice", "(2, 3, 4) axis -1 [1, 2)", {{2, 3, 4}}, [](In in) { return slice(in[0], -1, 1, 2); });
  add_case(cases, "slice", "overlapping slices multiplied", {{5}},
           [](In in) { return mul(slice(in[0], 0, 0, 3), slice(in[0], 0, 2, 5)); });

  add_case(cases, "stack", "two (2, 3) axis 0", {{2, 3}, {2, 3}}, [](In in) { return stack({in[0], in[1]}, 0); });
  add_case(cases, "stack", "three (2, 3) axis 1", {{2, 3}, {2, 3}, {2, 3}},
           [](In in) { return stack({in[0], in[1], in[2]}, 1); });
  add_case(cases, "stack", "two (2, 3) axis -1", {{2, 3}, {2, 3}}, [](In in) { return stack({in[0], in[1]}, -1); });
  add_case(cases, "stack", "rank-0 tensors", {Shape{}, Shape{}}, [](In in) { return stack({in[0], in[1]}, 0); });

  add_case(cases, "index_select", "table (3, 4), ids (3)", {{3, 4}},
           [](In in) { return index_select(in[0], {0, 2, 1}); });
  add_case(cases, "index_select", "repeated ids", {{3, 2}}, [](In in) { return index_select(in[0], {1, 1, 1, 0}); });
  add_case(cases, "index_select", "ids (2, 3) -> (2, 3, 3)", {{5, 3}},
           [](In in) { return index_select(in[0], Indices({4, 0, 4, 2, 0, 4}, {2, 3})); });
  add_case(cases, "index_select", "rank-0 id", {{1, 1}}, [](In in) { return index_select(in[0], Indices({0}, Shape{})); });
}

void add_reduction_cases(std::vector<OpCase>& cases) {
  using In = const std::vector<Tensor>&;
  add_case(cases, "sum", "all of (3, 4)", {{3, 4}}, [](In in) { return sum(in[0]); });
  add_case(cases, "sum", "all of rank 0", {Shape{}}, [](In in) { return sum(in[0]); });
  add_case(cases, "sum", "(3, 4) axis 0", {{3, 4}}, [](In in) { return sum(in[0], 0); });
  add_case(cases, "sum", "(2, 3, 4) axis 1 keepdim", {{2, 3, 4}}, [](In in) { return sum(in[0], 1, true); });
  add_case(cases, "sum", "(2, 3, 4) axis -1", {{2, 3, 4}}, [](In in) { return sum(in[0], -1); });
  add_case(cases, "mean", "all of (2, 3, 2)", {{2, 3, 2}}, [](In in) { return mean(in[0]); });
  add_case(cases, "mean", "all of (1)", {{1}}, [](In in) { return mean(in[0]); });
  add_case(cases, "mean", "(2, 3, 4) axis 0 keepdim", {{2, 3, 4}}, [](In in) { return mean(in[0], 0, true); });
  add_case(cases, "mean", "(2, 3, 4) axis -2", {{2, 3, 4}}, [](In in) { return mean(in[0], -2); });
  add_case(cases, "mean", "(2, 3, 4) axis 2 keepdim", {{2, 3, 4}}, [](In in) { return mean(in[0], 2, true); });
}

}  // namespace attend::tools
