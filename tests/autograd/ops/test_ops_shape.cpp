// autograd/ops/shape.cpp: transpose, reshape, concat, slice, stack, index_select.
// Hand-computed values and gradients, float64 gradchecks, float32 against
// float64, and every error message.
#include <doctest/doctest.h>

#include "autograd/autograd.hpp"
#include "core/core.hpp"

using namespace attend;

namespace {
using Fn = std::function<Tensor(const std::vector<Tensor>&)>;
using Values = std::vector<double>;

Tensor randn(const Shape& shape, std::uint64_t seed, DType dtype = Float64) {
  Generator gen(seed);
  return normal(shape, 0.0, 1.0, gen, dtype);
}

// 0, 1, ..., n-1 in the given shape.
Tensor iota(const Shape& shape, DType dtype = Float32) { return reshape(arange(shape.numel(), dtype), shape); }

void check_gradcheck(const Fn& fn, const std::vector<Shape>& shapes, std::uint64_t seed = 1) {
  std::vector<Tensor> inputs;
  for (const Shape& s : shapes) inputs.push_back(randn(s, seed++).requires_grad_());
  GradcheckReport report = gradcheck(fn, inputs);
  CHECK_MESSAGE(report.passed, report.str());
}

// Runs fn on float64 inputs and on the same values in float32; the outputs and
// the gradients (for one random upstream gradient) agree to float32 precision.
void check_float32_matches_float64(const Fn& fn, const std::vector<Shape>& shapes) {
  std::vector<Tensor> x64, x32;
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    Tensor x = randn(shapes[i], 100 + i);
    x64.push_back(x.clone().requires_grad_());
    x32.push_back(x.to(Float32).requires_grad_());
  }
  Tensor y64 = fn(x64), y32 = fn(x32);
  REQUIRE(y32.dtype() == Float32);
  CHECK(allclose(y32.to(Float64), y64, 1e-6, 1e-6));
  Tensor r = randn(y64.shape(), 7);
  y64.backward(r);
  y32.backward(r.to(Float32));
  for (std::size_t i = 0; i < shapes.size(); ++i) CHECK(allclose(x32[i].grad().to(Float64), x64[i].grad(), 1e-6, 1e-6));
}
}  // namespace

// ---- transpose -------------------------------------------------------------

TEST_CASE("transpose: hand-computed values") {
  CHECK(transpose(tensor({1, 2, 3, 4, 5, 6}, {2, 3}), 0, 1).to_vector() == Values{1, 4, 2, 5, 3, 6});
  CHECK(transpose(tensor({1, 2, 3, 4, 5, 6}, {2, 3}), 0, 1).shape() == Shape{3, 2});
  // x[a, j, i] = 12a + 4j + i, shape (2, 3, 4)
  Tensor x = iota({2, 3, 4});
  Tensor y = transpose(x, 0, 2);  // y[i, j, a] = x[a, j, i]
  CHECK(y.shape() == Shape{4, 3, 2});
  CHECK(y.to_vector() == Values{0, 12, 4, 16, 8, 20, 1, 13, 5, 17, 9, 21, 2, 14, 6, 18, 10, 22, 3, 15, 7, 19, 11, 23});
  Tensor z = transpose(x, -1, 1);  // the last two axes: z[a, i, j] = x[a, j, i]
  CHECK(z.shape() == Shape{2, 4, 3});
  CHECK(z.to_vector() == Values{0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11, 12, 16, 20, 13, 17, 21, 14, 18, 22, 15, 19, 23});
  Tensor w = transpose(x, 1, 0);  // whole rows of 4 move: w[j, a, :] = x[a, j, :]
  CHECK(w.shape() == Shape{3, 2, 4});
  CHECK(w.to_vector() == Values{0, 1, 2, 3, 12, 13, 14, 15, 4, 5, 6, 7, 16, 17, 18, 19, 8, 9, 10, 11, 20, 21, 22, 23});
}

TEST_CASE("transpose: matrices over several 16 x 16 tiles, with ragged edges, values and gradient") {
  // A plain matrix transpose runs in tiles (autograd/ops/shape.cpp), float32 in
  // 4 x 4 SSE blocks inside them; these shapes cross tile and block edges in
  // both directions and end mid-tile and mid-block.
  for (const DType dtype : {Float64, Float32})
  for (const Shape& shape : {Shape{37, 21}, Shape{3, 40, 17}, Shape{16, 16}, Shape{1, 50}, Shape{6, 5}, Shape{4, 8}}) {
    CAPTURE(shape);
    CAPTURE(dtype);
    Tensor x = randn(shape, 7, dtype).requires_grad_();
    Tensor y = transpose(x, -2, -1);
    const std::int64_t A = shape[shape.rank() - 2], B = shape[shape.rank() - 1], n = x.numel() / (A * B);
    const std::vector<double> xv = x.to_vector(), yv = y.to_vector();
    bool same = true;
    for (std::int64_t o = 0; o < n; ++o)
      for (std::int64_t i = 0; i < A; ++i)
        for (std::int64_t j = 0; j < B; ++j) same = same && yv[(o * B + j) * A + i] == xv[(o * A + i) * B + j];
    CHECK(same);
    const Tensor dy = randn(y.shape(), 8, dtype);
    y.backward(dy);
    CHECK(max_abs_diff(x.grad(), transpose(dy, -2, -1)) == 0);  // dx = dy^T, each element once
  }
}

TEST_CASE("transpose: the same axis twice is a copy, never shared") {
  Tensor x = tensor({1, 2, 3, 4}, {2, 2});
  Tensor y = transpose(x, 1, -1);
  CHECK(equal(y, x));
  y.set({0, 0}, 9);
  CHECK(x.at({0, 0}) == 1);
}

TEST_CASE("transpose: hand-computed gradient") {
  Tensor x = zeros({2, 3}).requires_grad_();
  transpose(x, 0, 1).backward(tensor({1, 2, 3, 4, 5, 6}, {3, 2}));
  CHECK(x.grad().to_vector() == Values{1, 3, 5, 2, 4, 6});
}

TEST_CASE("transpose: gradcheck") {
  check_gradcheck([](const auto& in) { return transpose(in[0], 0, 1); }, {{3, 4}});
  check_gradcheck([](const auto& in) { return transpose(in[0], 0, 2); }, {{2, 3, 4}});
  check_gradcheck([](const auto& in) { return transpose(in[0], -1, -2); }, {{2, 3, 4}});
  check_gradcheck([](const auto& in) { return transpose(in[0], 1, 3); }, {{2, 3, 2, 4, 2}});
  check_gradcheck([](const auto& in) { return transpose(in[0], 0, 0); }, {{5}});
  check_gradcheck([](const auto& in) { return add(transpose(in[0], 0, 1), transpose(in[0], 1, 0)); }, {{3, 3}});
}

TEST_CASE("transpose: float32 agrees with float64") {
  check_float32_matches_float64([](const auto& in) { return transpose(in[0], 0, 2); }, {{3, 4, 5}});
}

TEST_CASE("transpose: errors") {
  CHECK_THROWS_WITH_AS(transpose(zeros({2, 3}), 0, 2), "transpose: axis 2 is out of range for a tensor of shape [2, 3]",
                       Error);
  CHECK_THROWS_WITH_AS(transpose(zeros({2, 3}), -3, 0),
                       "transpose: axis -3 is out of range for a tensor of shape [2, 3]", Error);
  CHECK_THROWS_WITH_AS(transpose(Tensor(), 0, 1), "transpose: input is an undefined tensor", Error);
}

// ---- reshape ---------------------------------------------------------------

TEST_CASE("reshape: values, and the result shares the input's data") {
  Tensor x = tensor({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor y = reshape(x, {3, 1, 2});
  CHECK(y.shape() == Shape{3, 1, 2});
  CHECK(y.at({2, 0, 1}) == 6);
  CHECK(y.at({1, 0, 0}) == 3);
  CHECK(y.raw_data() == x.raw_data());
  x.set({0, 1}, 20);
  CHECK(y.at({0, 0, 1}) == 20);
  CHECK(reshape(scalar(4), {1, 1}).at({0, 0}) == 4);
  CHECK(reshape(tensor({5}), {}).item() == 5);
  CHECK(reshape(zeros({0, 3}), {3, 0, 2}).shape() == Shape{3, 0, 2});
}

TEST_CASE("reshape: hand-computed gradient, and the input's graph is untouched") {
  Tensor x = zeros({2, 3}).requires_grad_();
  Tensor y = reshape(x, {6});
  CHECK(x.is_leaf());
  CHECK_FALSE(y.is_leaf());
  y.backward(tensor({1, 2, 3, 4, 5, 6}));
  CHECK(x.grad().shape() == Shape{2, 3});
  CHECK(x.grad().to_vector() == Values{1, 2, 3, 4, 5, 6});
}

TEST_CASE("reshape: gradcheck") {
  check_gradcheck([](const auto& in) { return reshape(in[0], {4, 3}); }, {{3, 4}});
  check_gradcheck([](const auto& in) { return reshape(in[0], {2, 2, 6}); }, {{4, 6}});
  check_gradcheck([](const auto& in) { return reshape(in[0], {1}); }, {Shape{}});
  check_gradcheck([](const auto& in) { return reshape(in[0], {}); }, {{1, 1}});
  // The same input reshaped twice: both contributions add up in dx.
  check_gradcheck([](const auto& in) { return mul(reshape(in[0], {6}), reshape(in[0], {6})); }, {{2, 3}});
}

TEST_CASE("reshape: float32 agrees with float64") {
  check_float32_matches_float64([](const auto& in) { return mul(reshape(in[0], {4, 6}), 3.0); }, {{2, 3, 4}});
}

TEST_CASE("reshape: errors") {
  CHECK_THROWS_WITH_AS(reshape(zeros({2, 3}), {4, 2}),
                       "reshape: cannot reshape [2, 3] (6 elements) into [4, 2] (8 elements)", Error);
  CHECK_THROWS_WITH_AS(reshape(scalar(1), {0}), "reshape: cannot reshape [] (1 elements) into [0] (0 elements)", Error);
  CHECK_THROWS_WITH_AS(reshape(Tensor(), {1}), "reshape: input is an undefined tensor", Error);
}

// ---- concat ----------------------------------------------------------------

TEST_CASE("concat: hand-computed values") {
  Tensor a = tensor({1, 2, 3, 4}, {2, 2});
  CHECK(concat({a, tensor({5, 6}, {2, 1})}, 1).to_vector() == Values{1, 2, 5, 3, 4, 6});
  CHECK(concat({a, tensor({5, 6}, {2, 1})}, -1).shape() == Shape{2, 3});
  CHECK(concat({a, tensor({7, 8}, {1, 2})}, 0).to_vector() == Values{1, 2, 3, 4, 7, 8});
  CHECK(concat({tensor({1}), tensor({2, 3}), tensor({4})}, 0).to_vector() == Values{1, 2, 3, 4});
  CHECK(equal(concat({a}, 0), a));
  // The middle axis of (2, 1, 2) with (2, 2, 2): blocks of 1*2 and 2*2 per outer index.
  Tensor x = tensor({1, 2, 3, 4}, {2, 1, 2});
  Tensor y = tensor({10, 11, 12, 13, 14, 15, 16, 17}, {2, 2, 2});
  Tensor c = concat({x, y}, 1);
  CHECK(c.shape() == Shape{2, 3, 2});
  CHECK(c.to_vector() == Values{1, 2, 10, 11, 12, 13, 3, 4, 14, 15, 16, 17});
  // An empty part contributes nothing.
  CHECK(concat({a, zeros({2, 0})}, 1).to_vector() == Values{1, 2, 3, 4});
}

TEST_CASE("concat: hand-computed gradients, including one tensor given twice") {
  Tensor a = zeros({2, 2}).requires_grad_();
  Tensor b = zeros({2, 1}).requires_grad_();
  concat({a, b}, 1).backward(tensor({1, 2, 3, 4, 5, 6}, {2, 3}));
  CHECK(a.grad().to_vector() == Values{1, 2, 4, 5});
  CHECK(b.grad().to_vector() == Values{3, 6});
  Tensor x = zeros({2}).requires_grad_();
  concat({x, x}, 0).backward(tensor({1, 2, 10, 20}));
  CHECK(x.grad().to_vector() == Values{11, 22});
  // Only the parts that require grad get a gradient.
  Tensor fixed = zeros({1, 2});
  Tensor learned = zeros({1, 2}).requires_grad_();
  concat({fixed, learned}, 0).backward(tensor({1, 2, 3, 4}, {2, 2}));
  CHECK_FALSE(fixed.grad().defined());
  CHECK(learned.grad().to_vector() == Values{3, 4});
}

TEST_CASE("concat: gradcheck") {
  check_gradcheck([](const auto& in) { return concat({in[0], in[1]}, 0); }, {{2, 3}, {4, 3}});
  check_gradcheck([](const auto& in) { return concat({in[0], in[1], in[2]}, 1); }, {{2, 1, 3}, {2, 2, 3}, {2, 3, 3}});
  check_gradcheck([](const auto& in) { return concat({in[0], in[1]}, -1); }, {{2, 3, 2}, {2, 3, 4}});
  check_gradcheck([](const auto& in) { return concat({in[0], in[0]}, 0); }, {{3}});
  check_gradcheck([](const auto& in) { return concat({in[0]}, 0); }, {{1}});
}

TEST_CASE("concat: float32 agrees with float64") {
  check_float32_matches_float64([](const auto& in) { return concat({in[0], in[1]}, 1); }, {{2, 3, 4}, {2, 5, 4}});
}

TEST_CASE("concat: errors name the offending tensor") {
  CHECK_THROWS_WITH_AS(concat({}, 0), "concat: no tensors given", Error);
  CHECK_THROWS_WITH_AS(concat({zeros({2}), Tensor()}, 0), "concat: tensor 1 is undefined", Error);
  CHECK_THROWS_WITH_AS(concat({zeros({2}), zeros({2}), zeros({2}, Float64)}, 0),
                       "concat: tensor 2 is float64 but tensor 0 is float32 (convert with .to(dtype))", Error);
  CHECK_THROWS_WITH_AS(concat({zeros({2, 3}), zeros({2, 3, 1})}, 0),
                       "concat: tensor 1 has rank 3 (shape [2, 3, 1]) but tensor 0 has rank 2 (shape [2, 3])", Error);
  CHECK_THROWS_WITH_AS(concat({zeros({2, 3}), zeros({5, 3}), zeros({2, 4})}, -2),
                       "concat: tensor 2 has shape [2, 4] but tensor 0 has shape [2, 3]; sizes must match on every "
                       "axis except 0",
                       Error);
  CHECK_THROWS_WITH_AS(concat({zeros({2, 3})}, 2), "concat: axis 2 is out of range for a tensor of shape [2, 3]", Error);
  CHECK_THROWS_WITH_AS(concat({scalar(1), scalar(2)}, 0), "concat: axis 0 is out of range for a tensor of shape []",
                       Error);
}

// ---- slice -----------------------------------------------------------------

TEST_CASE("slice: hand-computed values") {
  Tensor x = iota({3, 4});  // [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]]
  CHECK(slice(x, 1, 1, 3).to_vector() == Values{1, 2, 5, 6, 9, 10});
  CHECK(slice(x, 1, 1, 3).shape() == Shape{3, 2});
  CHECK(slice(x, 0, 2, 3).to_vector() == Values{8, 9, 10, 11});
  CHECK(slice(x, -2, 0, 2).to_vector() == Values{0, 1, 2, 3, 4, 5, 6, 7});
  CHECK(equal(slice(x, 0, 0, 3), x));
  CHECK(slice(x, -1, 2, 2).shape() == Shape{3, 0});
  CHECK(slice(x, 1, 4, 4).shape() == Shape{3, 0});
  // The middle axis of (2, 3, 2): y[a, j, :] = x[a, 1 + j, :]
  CHECK(slice(iota({2, 3, 2}), 1, 1, 3).to_vector() == Values{2, 3, 4, 5, 8, 9, 10, 11});
}

TEST_CASE("slice: hand-computed gradient") {
  Tensor x = zeros({3, 4}).requires_grad_();
  slice(x, 1, 1, 3).backward(tensor({1, 2, 3, 4, 5, 6}, {3, 2}));
  CHECK(x.grad().to_vector() == Values{0, 1, 2, 0, 0, 3, 4, 0, 0, 5, 6, 0});
  // Two overlapping slices of one input add up.
  Tensor v = zeros({4}).requires_grad_();
  add(slice(v, 0, 0, 3), slice(v, 0, 1, 4)).backward(tensor({1, 10, 100}));
  CHECK(v.grad().to_vector() == Values{1, 11, 110, 100});
}

TEST_CASE("slice: gradcheck") {
  check_gradcheck([](const auto& in) { return slice(in[0], 0, 1, 3); }, {{4, 3}});
  check_gradcheck([](const auto& in) { return slice(in[0], 1, 0, 2); }, {{2, 4, 3}});
  check_gradcheck([](const auto& in) { return slice(in[0], -1, 1, 2); }, {{2, 3, 4}});
  check_gradcheck([](const auto& in) { return slice(in[0], 0, 0, 1); }, {{1}});
  check_gradcheck([](const auto& in) { return mul(slice(in[0], 0, 0, 3), slice(in[0], 0, 2, 5)); }, {{5}});
}

TEST_CASE("slice: float32 agrees with float64") {
  check_float32_matches_float64([](const auto& in) { return slice(in[0], 1, 1, 4); }, {{3, 5, 2}});
}

TEST_CASE("slice: errors") {
  Tensor x = zeros({3, 4});
  CHECK_THROWS_WITH_AS(slice(x, 1, -1, 2),
                       "slice: the range [-1, 2) is not within axis 1 of size 4 (shape [3, 4]); need 0 <= start <= "
                       "end <= 4",
                       Error);
  CHECK_THROWS_WITH_AS(slice(x, -1, 3, 2),
                       "slice: the range [3, 2) is not within axis 1 of size 4 (shape [3, 4]); need 0 <= start <= "
                       "end <= 4",
                       Error);
  CHECK_THROWS_WITH_AS(slice(x, 0, 0, 4),
                       "slice: the range [0, 4) is not within axis 0 of size 3 (shape [3, 4]); need 0 <= start <= "
                       "end <= 3",
                       Error);
  CHECK_THROWS_WITH_AS(slice(x, 2, 0, 1), "slice: axis 2 is out of range for a tensor of shape [3, 4]", Error);
  CHECK_THROWS_WITH_AS(slice(Tensor(), 0, 0, 1), "slice: input is an undefined tensor", Error);
}

// ---- stack -----------------------------------------------------------------

TEST_CASE("stack: hand-computed values") {
  Tensor a = tensor({1, 2, 3}), b = tensor({4, 5, 6});
  CHECK(stack({a, b}, 0).to_vector() == Values{1, 2, 3, 4, 5, 6});
  CHECK(stack({a, b}, 0).shape() == Shape{2, 3});
  CHECK(stack({a, b}, 1).to_vector() == Values{1, 4, 2, 5, 3, 6});
  CHECK(stack({a, b}, -1).shape() == Shape{3, 2});
  CHECK(stack({a, b}, -2).to_vector() == Values{1, 2, 3, 4, 5, 6});
  Tensor p = tensor({1, 2, 3, 4}, {2, 2}), q = tensor({5, 6, 7, 8}, {2, 2});
  Tensor m = stack({p, q}, 1);  // m[i, k, :] = (p, q)[k][i, :]
  CHECK(m.shape() == Shape{2, 2, 2});
  CHECK(m.to_vector() == Values{1, 2, 5, 6, 3, 4, 7, 8});
  CHECK(stack({scalar(1), scalar(2), scalar(3)}, 0).to_vector() == Values{1, 2, 3});
  CHECK(stack({a}, 0).shape() == Shape{1, 3});
}

TEST_CASE("stack: hand-computed gradient") {
  Tensor a = zeros({3}).requires_grad_(), b = zeros({3}).requires_grad_();
  stack({a, b}, 1).backward(tensor({1, 2, 3, 4, 5, 6}, {3, 2}));
  CHECK(a.grad().to_vector() == Values{1, 3, 5});
  CHECK(b.grad().to_vector() == Values{2, 4, 6});
}

TEST_CASE("stack: gradcheck") {
  check_gradcheck([](const auto& in) { return stack({in[0], in[1]}, 0); }, {{2, 3}, {2, 3}});
  check_gradcheck([](const auto& in) { return stack({in[0], in[1], in[2]}, 1); }, {{2, 3}, {2, 3}, {2, 3}});
  check_gradcheck([](const auto& in) { return stack({in[0], in[1]}, -1); }, {{2, 3}, {2, 3}});
  check_gradcheck([](const auto& in) { return stack({in[0], in[1]}, 0); }, {Shape{}, Shape{}});
  check_gradcheck([](const auto& in) { return stack({in[0], in[1], in[0]}, 1); }, {{3}, {3}});
}

TEST_CASE("stack: float32 agrees with float64") {
  check_float32_matches_float64([](const auto& in) { return stack({in[0], in[1]}, 1); }, {{3, 4}, {3, 4}});
}

TEST_CASE("stack: errors") {
  CHECK_THROWS_WITH_AS(stack({}, 0), "stack: no tensors given", Error);
  CHECK_THROWS_WITH_AS(stack({zeros({3}), Tensor()}, 0), "stack: tensor 1 is undefined", Error);
  CHECK_THROWS_WITH_AS(stack({zeros({3}), zeros({3}, Float64)}, 0),
                       "stack: tensor 1 is float64 but tensor 0 is float32 (convert with .to(dtype))", Error);
  CHECK_THROWS_WITH_AS(stack({zeros({3}), zeros({3}), zeros({4})}, 0),
                       "stack: tensor 2 has shape [4] but tensor 0 has shape [3]; stack needs equal shapes", Error);
  CHECK_THROWS_WITH_AS(stack({zeros({3}), zeros({3})}, 2),
                       "stack: axis 2 is out of range for stacking tensors of shape [3] (the result has rank 2)", Error);
  CHECK_THROWS_WITH_AS(stack({zeros({3}), zeros({3})}, -3),
                       "stack: axis -3 is out of range for stacking tensors of shape [3] (the result has rank 2)", Error);
  CHECK_THROWS_WITH_AS(stack({zeros({1, 1, 1, 1, 1, 1})}, 0),
                       "stack: tensors of shape [1, 1, 1, 1, 1, 1] already have the maximum rank 6", Error);
}

// ---- index_select ----------------------------------------------------------

TEST_CASE("index_select: hand-computed values") {
  Tensor table = tensor({1, 2, 3, 4, 5, 6}, {3, 2});
  Tensor y = index_select(table, {2, 0, 2});
  CHECK(y.shape() == Shape{3, 2});
  CHECK(y.to_vector() == Values{5, 6, 1, 2, 5, 6});
  Tensor m = index_select(table, Indices({1, 0, 2, 1}, {2, 2}));  // (B, T) ids -> (B, T, D)
  CHECK(m.shape() == Shape{2, 2, 2});
  CHECK(m.to_vector() == Values{3, 4, 1, 2, 5, 6, 3, 4});
  Tensor one = index_select(table, Indices({2}, Shape{}));  // a rank-0 index -> (D)
  CHECK(one.shape() == Shape{2});
  CHECK(one.to_vector() == Values{5, 6});
  CHECK(index_select(table, Indices(std::vector<std::int64_t>{})).shape() == Shape{0, 2});
  CHECK(index_select(zeros({3, 0}), {1, 2}).shape() == Shape{2, 0});
}

TEST_CASE("index_select: the backward scatter-adds, repeated indices accumulate") {
  Tensor table = zeros({3, 2}).requires_grad_();
  index_select(table, {2, 0, 2}).backward(tensor({1, 2, 3, 4, 5, 6}, {3, 2}));
  CHECK(table.grad().to_vector() == Values{3, 4, 0, 0, 6, 8});
  Tensor t2 = zeros({4, 1}).requires_grad_();
  index_select(t2, Indices({3, 3, 3, 0}, {2, 2})).backward(tensor({1, 2, 4, 8}, {2, 2, 1}));
  CHECK(t2.grad().to_vector() == Values{8, 0, 0, 7});
}

TEST_CASE("index_select: gradcheck") {
  auto gather = [](Indices ids) { return [ids](const std::vector<Tensor>& in) { return index_select(in[0], ids); }; };
  check_gradcheck(gather({0, 2, 1}), {{3, 4}});
  check_gradcheck(gather({1, 1, 1, 0}), {{3, 2}});                    // repeated indices
  check_gradcheck(gather(Indices({4, 0, 4, 2, 0, 4}, {2, 3})), {{5, 3}});  // (B, T) ids
  check_gradcheck(gather(Indices({0}, Shape{})), {{1, 1}});
  check_gradcheck([](const auto& in) { return mul(index_select(in[0], {0, 1}), index_select(in[0], {1, 1})); }, {{2, 3}});
}

TEST_CASE("index_select: float32 agrees with float64") {
  check_float32_matches_float64([](const auto& in) { return index_select(in[0], Indices({3, 0, 3, 1, 1, 2}, {3, 2})); },
                                {{4, 5}});
}

TEST_CASE("index_select: errors") {
  Tensor table = zeros({5, 2});
  CHECK_THROWS_WITH_AS(index_select(table, {0, 1, 2, 7}),
                       "index_select: index 7 at position 3 is out of range for a table of 5 rows", Error);
  CHECK_THROWS_WITH_AS(index_select(table, {-1}),
                       "index_select: index -1 at position 0 is out of range for a table of 5 rows", Error);
  CHECK_THROWS_WITH_AS(index_select(table, {5}),
                       "index_select: index 5 at position 0 is out of range for a table of 5 rows", Error);
  CHECK_THROWS_WITH_AS(index_select(table, Indices({0, 1, 2, 9, 3, 4}, {2, 3})),
                       "index_select: index 9 at position [1, 0] is out of range for a table of 5 rows", Error);
  CHECK_THROWS_WITH_AS(index_select(zeros({0, 2}), {0}),
                       "index_select: index 0 at position 0 is out of range for a table of 0 rows", Error);
  CHECK_THROWS_WITH_AS(index_select(zeros({5}), {0}), "index_select: the table must be (N, D), got shape [5]", Error);
  CHECK_THROWS_WITH_AS(index_select(Tensor(), {0}), "index_select: table is an undefined tensor", Error);
  Indices bad;
  bad.values = {1, 2};
  bad.shape = Shape{3};
  CHECK_THROWS_WITH_AS(index_select(table, bad), "index_select: indices hold 2 values but their shape [3] holds 3",
                       Error);
  CHECK_THROWS_WITH_AS(index_select(table, Indices({0}, {1, 1, 1, 1, 1, 1})),
                       "index_select: indices of shape [1, 1, 1, 1, 1, 1] have rank 6; at most 5 is supported (the "
                       "result adds an axis)",
                       Error);
}
