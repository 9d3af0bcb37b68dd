// The grader of the exercises: each answer of exercises.hpp becomes the
// backward of a custom op whose forward is attend's own, and gradcheck
// compares it with finite differences. A wrong answer is reported with the
// input and the element that disagree, and a hint.
//
//   exercises [--only NAME]     exit 0 when every exercise graded passes
//
// Built once with answers.cpp (the target `exercises`, which runs it), and by
// the test suite with solutions.cpp, stubs.cpp and wrong.cpp.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "autograd/autograd.hpp"
#include "tests/exercises/exercises.hpp"

namespace attend::exercises {
namespace {

Tensor randn(const Shape& shape, std::uint64_t seed, double stddev = 1.0) {
  Generator gen(seed);
  return normal(shape, 0.0, stddev, gen, Float64).requires_grad_();
}

struct Exercise {
  const char* name;
  const char* hint;
  std::vector<std::string> inputs;  // names of the checked inputs
  std::function<Tensors(const Tensors&)> fn;
  Tensors args;
};

// softmax and masked softmax of a (4, 5) x; the mask has a one-position row and an empty row.
Exercise softmax_exercise() {
  CustomOp op{.name = "softmax_backward",
              .input_names = {"x"},
              .forward =
                  [](OpContext& ctx, const Tensors& in) {
                    Tensor y = softmax(in[0], -1);
                    ctx.save({y});
                    return Tensors{y};
                  },
              .backward = [](const OpContext& ctx, Grads& g) { softmax_backward(ctx.saved(0), g.dy(), g.dx(0)); }};
  return {"softmax_backward",
          "dx_i = y_i (dy_i - sum_k y_k dy_k), per row: the Jacobian of softmax is diag(y) - y y^T, not only its "
          "diagonal",
          {"x"},
          [op](const Tensors& in) { return op(in); },
          {randn({4, 5}, 1)}};
}

Exercise masked_softmax_exercise() {
  const Tensor mask = tensor({1, 1, 0, 1, 0, /**/ 0, 0, 1, 0, 0, /**/ 0, 0, 0, 0, 0, /**/ 1, 1, 1, 1, 1}, {4, 5}, Float64);
  CustomOp op{.name = "masked_softmax_backward",
              .input_names = {"x"},
              .forward =
                  [mask](OpContext& ctx, const Tensors& in) {
                    Tensor y = masked_softmax(in[0], mask, -1);
                    ctx.save({y});
                    return Tensors{y};
                  },
              .backward =
                  [mask](const OpContext& ctx, Grads& g) {
                    masked_softmax_backward(ctx.saved(0), mask, g.dy(), g.dx(0));
                  }};
  return {"masked_softmax_backward",
          "the softmax formula again: y is 0 where masked, so those positions (and a row with nothing kept) get "
          "exactly 0, with no division",
          {"x"},
          [op](const Tensors& in) { return op(in); },
          {randn({4, 5}, 2)}};
}

Exercise cross_entropy_exercise() {
  const Indices targets({2, 0, 4});
  Tensor onehot = zeros({3, 5}, Float64);
  for (std::int64_t n = 0; n < 3; ++n) onehot.set({n, targets.values[n]}, 1.0);
  CustomOp op{.name = "cross_entropy_backward",
              .input_names = {"z"},
              .forward =
                  [targets](OpContext& ctx, const Tensors& in) {
                    ctx.save({softmax(in[0], -1)});
                    return Tensors{cross_entropy(in[0], targets)};
                  },
              .backward =
                  [onehot](const OpContext& ctx, Grads& g) {
                    cross_entropy_backward(ctx.saved(0), onehot, g.dy(), g.dx(0));
                  }};
  return {"cross_entropy_backward",
          "d(-log p_t)/dz = p - onehot(t) for one row; the loss is the mean over N rows, and dloss scales it",
          {"z"},
          [op](const Tensors& in) { return op(in); },
          {randn({3, 5}, 3)}};
}

Exercise additive_exercise() {
  CustomOp op{.name = "additive_score_backward",
              .input_names = {"q", "k", "v"},
              .forward =
                  [](OpContext& ctx, const Tensors& in) {
                    const std::int64_t B = in[1].size(0), A = in[1].size(2);
                    Tensor t = tanh(in[1] + reshape(in[0], {B, 1, A}));  // (B, S, A)
                    ctx.save({t, in[2]});
                    return Tensors{sum(t * in[2], -1)};  // (B, S)
                  },
              .backward =
                  [](const OpContext& ctx, Grads& g) {
                    additive_score_backward(ctx.saved(0), ctx.saved(1), g.dy(), g.dx(0), g.dx(1), g.dx(2));
                  }};
  return {"additive_score_backward",
          "tanh' = 1 - tanh^2; q is added at every position j, so dq sums over j; dv sums over the batch and the "
          "positions",
          {"q", "k", "v"},
          [op](const Tensors& in) { return op(in); },
          {randn({2, 4}, 4), randn({2, 3, 4}, 5), randn({4}, 6)}};
}

Exercise dot_exercise() {
  const Tensor mask = tensor({1, 1, 1, /**/ 1, 1, 0}, {2, 3}, Float64);
  const double scale = 0.5;
  CustomOp op{.name = "dot_attention_backward",
              .input_names = {"q", "k", "h"},
              .forward =
                  [mask, scale](OpContext& ctx, const Tensors& in) {
                    const Tensor &q = in[0], &k = in[1], &h = in[2];
                    const std::int64_t B = k.size(0), S = k.size(1), D = k.size(2), H = h.size(2);
                    Tensor e = sum(k * reshape(q, {B, 1, D}), -1) * scale;              // (B, S)
                    Tensor alpha = masked_softmax(e, mask, -1);                          // (B, S)
                    Tensor c = reshape(matmul(reshape(alpha, {B, 1, S}), h), {B, H});  // (B, H)
                    ctx.save({q, k, h, alpha});
                    return Tensors{c};
                  },
              .backward =
                  [scale](const OpContext& ctx, Grads& g) {
                    dot_attention_backward(ctx.saved(0), ctx.saved(1), ctx.saved(2), ctx.saved(3), scale, g.dy(),
                                           g.dx(0), g.dx(1), g.dx(2));
                  }};
  return {"dot_attention_backward",
          "three steps back: dalpha_j = dc . h_j (and dh_j = alpha_j dc); the softmax's backward gives de; then "
          "e_j = scale k_j . q gives dq = scale sum_j de_j k_j and dk_j = scale de_j q",
          {"q", "k", "h"},
          [op](const Tensors& in) { return op(in); },
          {randn({2, 4}, 7), randn({2, 3, 4}, 8), randn({2, 3, 5}, 9)}};
}

Exercise lstm_exercise() {
  CustomOp op{.name = "lstm_cell_backward",
              .input_names = {"x", "h_prev", "c_prev", "W_ih", "W_hh", "b_ih", "b_hh"},
              .forward =
                  [](OpContext& ctx, const Tensors& in) {
                    const std::int64_t H = in[1].size(1);
                    Tensor a = linear(in[0], in[3], in[5]) + linear(in[1], in[4], in[6]);  // (B, 4H)
                    Tensor i = sigmoid(slice(a, 1, 0, H)), f = sigmoid(slice(a, 1, H, 2 * H));
                    Tensor gg = tanh(slice(a, 1, 2 * H, 3 * H)), o = sigmoid(slice(a, 1, 3 * H, 4 * H));
                    Tensor c = f * in[2] + i * gg;
                    Tensor tanh_c = tanh(c);
                    ctx.save({in[0], in[1], in[2], in[3], in[4], i, f, gg, o, tanh_c});
                    return Tensors{o * tanh_c, c};
                  },
              .backward =
                  [](const OpContext& ctx, Grads& g) {
                    const LSTMSaved s{ctx.saved(0), ctx.saved(1), ctx.saved(2), ctx.saved(3), ctx.saved(4),
                                      ctx.saved(5), ctx.saved(6), ctx.saved(7), ctx.saved(8), ctx.saved(9)};
                    lstm_cell_backward(s, g.dy(0), g.dy(1),
                                       {g.dx(0), g.dx(1), g.dx(2), g.dx(3), g.dx(4), g.dx(5), g.dx(6)});
                  }};
  const std::int64_t B = 2, I = 3, H = 4;
  return {"lstm_cell_backward",
          "dc reaches c along two paths, dc + dh * o * (1 - tanh(c)^2); dc_prev is that times f; sigmoid' = "
          "s (1 - s); the four gate gradients side by side, da (B, 4H), give dx = da W_ih, dW_ih = da^T x, db = the "
          "sum of da over the batch",
          {"x", "h_prev", "c_prev", "W_ih", "W_hh", "b_ih", "b_hh"},
          [op](const Tensors& in) { return op(in); },
          {randn({B, I}, 10), randn({B, H}, 11), randn({B, H}, 12), randn({4 * H, I}, 13, 0.5),
           randn({4 * H, H}, 14, 0.5), randn({4 * H}, 15, 0.5), randn({4 * H}, 16, 0.5)}};
}

// Did the answer add anything at all? (All zero: the stub is untouched.)
bool nothing_added(const GradcheckReport& r) {
  for (const InputReport& in : r.inputs) {
    if (in.worst.analytic != 0) return false;
    for (const ElementCheck& c : in.failures)
      if (c.analytic != 0) return false;
  }
  return true;
}

bool grade(int number, const Exercise& e) {
  GradcheckOptions options;
  options.names = e.inputs;
  options.per_node = false;
  GradcheckReport r;
  try {
    r = gradcheck(e.fn, e.args, options);
  } catch (const Error& err) {
    std::printf("FAIL %d. %s: %s\n", number, e.name, err.what());
    return false;
  }
  if (r.passed) {
    std::printf("pass %d. %s\n", number, e.name);
    return true;
  }
  for (const InputReport& in : r.inputs) {
    if (in.passed) continue;
    std::string where = in.worst.index.empty() ? "" : fmt::format("[{}]", fmt::join(in.worst.index, ", "));
    std::printf("FAIL %d. %s: dL/d%s wrong at %s (yours %.6g, finite differences %.6g)\n", number, e.name,
                in.name.c_str(), where.c_str(), in.worst.analytic, in.worst.numeric);
    if (nothing_added(r))
      std::printf("     nothing was added to the gradients: write %s in tests/exercises/answers.cpp\n", e.name);
    else if (in.assigns_instead_of_adding)
      std::printf("     the values are right but assigned (dx = ...): add them to the slot (dx.add_(...))\n");
    else
      std::printf("     hint: %s\n", e.hint);
    return false;
  }
  // Every input's gradient right, and yet an op inside fn does not add into its inputs' slots.
  std::printf("FAIL %d. %s: %s\n", number, e.name, r.first_wrong_node_summary().c_str());
  return false;
}

}  // namespace
}  // namespace attend::exercises

int main(int argc, char** argv) {
  using namespace attend::exercises;
  const char* only = nullptr;
  if (argc == 3 && std::strcmp(argv[1], "--only") == 0) only = argv[2];
  else if (argc != 1) {
    std::fprintf(stderr, "usage: %s [--only NAME]\n", argv[0]);
    return 2;
  }
  const std::vector<Exercise> all = {softmax_exercise(),  masked_softmax_exercise(), cross_entropy_exercise(),
                                     additive_exercise(), dot_exercise(),            lstm_exercise()};
  int passed = 0, graded = 0;
  for (std::size_t n = 0; n < all.size(); ++n) {
    if (only && std::strcmp(only, all[n].name) != 0) continue;
    ++graded;
    if (grade(static_cast<int>(n + 1), all[n])) ++passed;
  }
  if (graded == 0) {
    std::fprintf(stderr, "no exercise named %s\n", only);
    return 2;
  }
  std::printf("%d of %d exercises passed\n", passed, graded);
  return passed == graded ? 0 : 1;
}
