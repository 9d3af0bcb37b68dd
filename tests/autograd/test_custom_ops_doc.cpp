// docs/custom-ops.md, as code: every ```cpp block of that page stands in this
// file word for word (the last test case checks it), so the page's examples
// compile and pass.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include "autograd/autograd.hpp"
#include "tools/package/doctest.hpp"

using namespace attend;

namespace {

// y = softmax(x) along the last axis   dx += y * (dy - sum(y * dy))   (per row)
const CustomOp my_softmax{
    .name = "my_softmax",
    .input_names = {"x"},
    .forward =
        [](OpContext& ctx, const Tensors& in) {
          Tensor y = softmax(in[0], -1);  // plain tensor ops: nothing inside forward is recorded
          ctx.save({y});
          return Tensors{y};
        },
    .backward =
        [](const OpContext& ctx, Grads& g) {
          const Tensor& y = ctx.saved(0);
          const Tensor& dy = g.dy();
          if (g.needs(0)) g.dx(0).add_(y * (dy - sum(y * dy, -1, /*keepdim=*/true)));
        }};

// Additive scores of one decoder step, 0 at padding:
//   q (B, A), k (B, S, A), v (A), mask (B, S) of 1 and 0 (no gradient)
//   t = tanh(k_j + q)            (B, S, A)
//   e_j = mask_j * (v . t_j)     (B, S)
// Backward, with de = dy * mask:
//   dv += sum_{b,j} de_bj t_bj;   dpre = de_j v (1 - t_j^2);   dk += dpre;   dq += sum_j dpre_j
const CustomOp additive_score{
    .name = "additive_score",
    .input_names = {"q", "k", "v", "mask"},
    .forward =
        [](OpContext& ctx, const Tensors& in) {
          const Tensor &q = in[0], &k = in[1], &v = in[2], &mask = in[3];
          const std::int64_t B = k.size(0), A = k.size(2);
          Tensor t = tanh(k + reshape(q, {B, 1, A}));  // (B, S, A), q broadcast over S
          ctx.save({t, v, mask});
          return Tensors{mask * sum(t * v, -1)};  // (B, S)
        },
    .backward =
        [](const OpContext& ctx, Grads& g) {
          const Tensor &t = ctx.saved(0), &v = ctx.saved(1), &mask = ctx.saved(2);
          const std::int64_t B = t.size(0), S = t.size(1);
          Tensor de = reshape(g.dy() * mask, {B, S, 1});  // (B, S, 1)
          Tensor dpre = de * v * (1.0 - t * t);           // (B, S, A)
          if (g.needs(0)) g.dx(0).add_(sum(dpre, 1));     // dq (B, A)
          if (g.needs(1)) g.dx(1).add_(dpre);             // dk (B, S, A)
          if (g.needs(2)) g.dx(2).add_(sum(sum(de * t, 0), 0));  // dv (A)
        }};

}  // namespace

TEST_CASE("docs/custom-ops.md: my_softmax") {
  Generator gen(1);
  Tensor x = normal({3, 4}, 0, 1, gen, Float64).requires_grad_();
  CHECK_GRADIENTS([](const Tensors& in) { return my_softmax(in); }, {x});
}

TEST_CASE("docs/custom-ops.md: additive_score, with a padded row") {
  Generator gen(2);
  const std::int64_t B = 2, S = 3, A = 4;
  Tensor q = normal({B, A}, 0, 1, gen, Float64).requires_grad_();
  Tensor k = normal({B, S, A}, 0, 1, gen, Float64).requires_grad_();
  Tensor v = normal({A}, 0, 1, gen, Float64).requires_grad_();
  Tensor mask = tensor({1, 1, 1, /**/ 1, 0, 0}, {B, S}, Float64);  // no requires_grad: no gradient
  CHECK_GRADIENTS([&](const Tensors& in) { return additive_score({in[0], in[1], in[2], mask}); }, {q, k, v});
}

TEST_CASE("docs/custom-ops.md: attention from the two, checked op by op") {
  Generator gen(3);
  const std::int64_t B = 2, S = 3, A = 4, H = 5;
  Tensor q = normal({B, A}, 0, 1, gen, Float64).requires_grad_();
  Tensor k = normal({B, S, A}, 0, 1, gen, Float64).requires_grad_();
  Tensor v = normal({A}, 0, 1, gen, Float64).requires_grad_();
  Tensor h = normal({B, S, H}, 0, 1, gen, Float64).requires_grad_();
  Tensor mask = tensor({1, 1, 1, /**/ 1, 1, 0}, {B, S}, Float64);
  // c = sum_j alpha_j h_j with alpha = softmax(e): (B, 1, S) @ (B, S, H) -> (B, H)
  auto context = [&](const Tensors& in) {
    Tensor alpha = my_softmax({additive_score({in[0], in[1], in[2], mask})})[0];  // (B, S)
    return reshape(matmul(reshape(alpha, {B, 1, S}), in[3]), {B, H});
  };
  CHECK_GRADIENTS(context, {q, k, v, h});
  GradcheckReport r = gradcheck_nodes(context, {q, k, v, h});
  CHECK(r.passed);
  for (const NodeReport& n : r.nodes) CHECK(n.checked);
}

TEST_CASE("docs/custom-ops.md: the slip of 1 - t for 1 - t*t, found and named") {
  CustomOp slipped = additive_score;
  slipped.name = "slipped_score";
  slipped.backward = [](const OpContext& ctx, Grads& g) {
    const Tensor &t = ctx.saved(0), &v = ctx.saved(1), &mask = ctx.saved(2);
    Tensor de = reshape(g.dy() * mask, {t.size(0), t.size(1), 1});
    Tensor dpre = de * v * (1.0 - t);  // the slip
    if (g.needs(0)) g.dx(0).add_(sum(dpre, 1));
    if (g.needs(1)) g.dx(1).add_(dpre);
    if (g.needs(2)) g.dx(2).add_(sum(sum(de * t, 0), 0));
  };
  Generator gen(4);
  Tensor q = normal({2, 4}, 0, 1, gen, Float64).requires_grad_();
  Tensor k = normal({2, 3, 4}, 0, 1, gen, Float64).requires_grad_();
  Tensor v = normal({4}, 0, 1, gen, Float64).requires_grad_();
  Tensor mask = tensor({1, 1, 1, /**/ 1, 0, 0}, {2, 3}, Float64);
  GradcheckOptions options;
  options.names = {"q", "k", "v"};
  GradcheckReport r = gradcheck(
      [&](const Tensors& in) { return my_softmax({slipped({in[0], in[1], in[2], mask})[0]}); }, {q, k, v}, options);
  CHECK_FALSE(r.passed);
  CHECK(r.inputs[2].passed);  // dv does not use (1 - t*t): it is right
  CHECK(r.first_wrong_node_summary().rfind("slipped_score: dL/dq wrong at [", 0) == 0);
}

TEST_CASE("docs/custom-ops.md shows only code that is in this file") {
  const std::filesystem::path root = std::filesystem::path(ATTEND_TEST_DATA).parent_path().parent_path();
  auto read = [](const std::filesystem::path& p) {
    std::ifstream in(p);
    REQUIRE(in.good());
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  };
  const std::string doc = read(root / "docs" / "custom-ops.md");
  const std::string code = read(root / "tests" / "autograd" / "test_custom_ops_doc.cpp");
  int blocks = 0;
  for (std::size_t at = doc.find("```cpp\n"); at != std::string::npos; at = doc.find("```cpp\n", at)) {
    const std::size_t start = at + 7, end = doc.find("```", start);
    REQUIRE(end != std::string::npos);
    const std::string block = doc.substr(start, end - start);
    CAPTURE(block);
    CHECK(code.find(block) != std::string::npos);
    ++blocks;
    at = end + 3;
  }
  CHECK(blocks >= 4);
}
