// gradcheck cases for autograd/ops/softmax.cpp, autograd/ops/losses.cpp and autograd/ops/dropout.cpp.
#include "autograd/ops.hpp"
#include "tools/gradcheck/op_cases.hpp"

namespace attend::tools {

namespace {
Tensor randn(const Shape& shape, std::uint64_t seed, double stddev = 1.0) {
  Generator gen(seed);
  return normal(shape, 0.0, stddev, gen, Float64).requires_grad_();
}

// (B, T, S) = (2, 3, 4) attention-like masks, 1 keep, 0 masked.
Tensor partly_masked() {  // (2, 3, 4): every row keeps something, some keep one position
  return tensor({1, 1, 0, 0, /**/ 1, 0, 1, 1, /**/ 0, 0, 0, 1,  //
                 1, 1, 1, 1, /**/ 0, 1, 0, 0, /**/ 1, 0, 1, 0},
                {2, 3, 4}, Float64);
}
Tensor with_empty_rows() {  // (2, 3, 4): row (0, 1) and row (1, 2) are fully masked
  return tensor({1, 0, 1, 0, /**/ 0, 0, 0, 0, /**/ 1, 1, 1, 0,  //
                 0, 1, 1, 1, /**/ 1, 0, 0, 0, /**/ 0, 0, 0, 0},
                {2, 3, 4}, Float64);
}
}  // namespace

void add_softmax_cases(std::vector<OpCase>& cases) {
  struct AxisCase {
    const char* name;
    Shape shape;
    int axis;
  };
  for (const AxisCase& c : {AxisCase{"(3, 5) axis -1", {3, 5}, -1}, AxisCase{"(3, 5) axis 0", {3, 5}, 0},
                            AxisCase{"(2, 3, 4) axis 1", {2, 3, 4}, 1}, AxisCase{"(4) axis 0", {4}, 0}}) {
    cases.push_back({"softmax", c.name, [c] {
                       return gradcheck([c](const std::vector<Tensor>& in) { return softmax(in[0], c.axis); },
                                        {randn(c.shape, 20, 2.0)});
                     }});
    cases.push_back({"log_softmax", c.name, [c] {
                       return gradcheck([c](const std::vector<Tensor>& in) { return log_softmax(in[0], c.axis); },
                                        {randn(c.shape, 21, 2.0)});
                     }});
  }
  auto masked = [](const char* name, Tensor mask, int axis) {
    return OpCase{"masked_softmax", name, [mask, axis] {
                    return gradcheck([&](const std::vector<Tensor>& in) { return masked_softmax(in[0], mask, axis); },
                                     {randn({2, 3, 4}, 22, 2.0)});
                  }};
  };
  cases.push_back(masked("(2, 3, 4) partly masked, one-position rows", partly_masked(), -1));
  cases.push_back(masked("(2, 3, 4) with fully masked rows", with_empty_rows(), 2));
  cases.push_back(masked("(2, 3, 4) mask (2, 1, 4) broadcast over T",
                         tensor({1, 1, 1, 0, /**/ 0, 1, 0, 1}, {2, 1, 4}, Float64), -1));
  cases.push_back(masked("(2, 3, 4) mask (4) broadcast", tensor({0, 1, 1, 1}, {4}, Float64), -1));
  cases.push_back(masked("(2, 3, 4) masked along axis 1", partly_masked(), 1));
  cases.push_back({"masked_fill", "(2, 3, 4) value -3", [] {
                     Tensor mask = with_empty_rows();
                     return gradcheck([&](const std::vector<Tensor>& in) { return masked_fill(in[0], mask, -3.0); },
                                      {randn({2, 3, 4}, 23)});
                   }});
  cases.push_back({"masked_fill", "(2, 3, 4) mask (2, 1, 4)", [] {
                     Tensor mask = tensor({1, 1, 1, 0, /**/ 0, 1, 0, 1}, {2, 1, 4}, Float64);
                     return gradcheck([&](const std::vector<Tensor>& in) { return masked_fill(in[0], mask, 0.0); },
                                      {randn({2, 3, 4}, 24)});
                   }});
}

// The training-time ops: the loss, and dropout (whose mask must be the same at
// every finite-difference evaluation, so fn recreates the Generator each time).
void add_loss_cases(std::vector<OpCase>& cases) {
  struct CeCase {
    const char* name;
    std::vector<std::int64_t> targets;
    std::int64_t ignore_index;
    double smoothing;
  };
  for (const CeCase& c : {CeCase{"(4, 5)", {0, 4, 2, 2}, -100, 0.0},
                          CeCase{"(4, 5) some targets ignored", {1, -100, 3, -100}, -100, 0.0},
                          CeCase{"(4, 5) all targets ignored", {0, 0, 0, 0}, 0, 0.0},
                          CeCase{"(4, 5) label smoothing 0.1", {0, 4, 2, 2}, -100, 0.1},
                          CeCase{"(4, 5) smoothing 0.2, ignore_index 0", {0, 4, 0, 1}, 0, 0.2}}) {
    cases.push_back({"cross_entropy", c.name, [c] {
                       Indices targets(c.targets);
                       return gradcheck(
                           [&](const std::vector<Tensor>& in) {
                             return cross_entropy(in[0], targets, c.ignore_index, c.smoothing);
                           },
                           {randn({4, 5}, 25, 2.0)});
                     }});
  }
  for (const double p : {0.3, 0.75}) {
    cases.push_back({"dropout", p == 0.3 ? "(3, 5) p 0.3 training, seed 7" : "(3, 5) p 0.75 training, seed 7", [p] {
                       return gradcheck(
                           [p](const std::vector<Tensor>& in) {
                             Generator gen(7);
                             return dropout(in[0], p, true, gen);
                           },
                           {randn({3, 5}, 26)});
                     }});
  }
}

}  // namespace attend::tools
