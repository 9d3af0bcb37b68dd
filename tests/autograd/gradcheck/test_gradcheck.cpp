// autograd/gradcheck: the wrong backwards test writers write, each caught and
// located (input and element); accumulation errors; the report; directional
// mode; per-node mode naming the wrong op inside a graph the size of a Seq2Seq
// step; float32 refused; and the catalogue behind `attend gradcheck`.
//
// Letters: B batch, S source length, E embedding size, H hidden size, V vocabulary.
#include <doctest/doctest.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <numeric>

#include "autograd/custom_op.hpp"
#include "autograd/gradcheck/gradcheck.hpp"
#include "autograd/ops.hpp"
#include "layers/attention/attention.hpp"
#include "layers/embedding.hpp"
#include "layers/gradcheck_module.hpp"
#include "layers/linear.hpp"
#include "layers/lstm/lstm_cell.hpp"
#include "models/seq2seq.hpp"
#include "tools/cli/commands.hpp"
#include "tools/gradcheck/op_cases.hpp"

using namespace attend;

namespace {

Tensor randn(const Shape& shape, std::uint64_t seed, double stddev = 1.0) {
  Generator gen(seed);
  return normal(shape, 0.0, stddev, gen, Float64).requires_grad_();
}

using Backward = std::function<void(const OpContext&, Grads&)>;

// y = tanh(x), with the backward under test; saves t = tanh(x).
CustomOp tanh_op(const char* name, Backward backward) {
  return {.name = name,
          .input_names = {"x"},
          .forward =
              [](OpContext& ctx, const Tensors& in) {
                Tensor t = tanh(in[0]);
                ctx.save({t});
                return Tensors{t};
              },
          .backward = std::move(backward)};
}

// y = a * b (same shapes), with the backward under test; saves a and b.
CustomOp product_op(Backward backward) {
  return {.name = "product",
          .input_names = {"a", "b"},
          .forward =
              [](OpContext& ctx, const Tensors& in) {
                ctx.save({in[0], in[1]});
                return Tensors{in[0] * in[1]};
              },
          .backward = std::move(backward)};
}

// The failing input's report, which must name an element inside the input.
const InputReport& failing(const GradcheckReport& r, const std::string& name) {
  for (const InputReport& in : r.inputs)
    if (in.name == name) {
      CHECK_FALSE(in.passed);
      REQUIRE(!in.failures.empty());
      CHECK(in.failures[0].index.size() == static_cast<std::size_t>(in.shape.rank()));
      CHECK(in.failures[0].abs_error > in.failures[0].tolerance);
      CHECK(r.str().find(name + " " + fmt::format("{}", in.shape) + ": ") != std::string::npos);
      return in;
    }
  FAIL("no input named " << name);
  throw Error("unreachable");
}

}  // namespace

TEST_CASE("a correct custom op passes, with one and with several outputs") {
  CustomOp good = tanh_op("good_tanh", [](const OpContext& ctx, Grads& g) {
    const Tensor& t = ctx.saved(0);
    if (g.needs(0)) g.dx(0).add_(g.dy() * (1.0 - t * t));  // y = tanh(x)   dx += dy * (1 - t²)
  });
  GradcheckReport r = gradcheck([&](const Tensors& in) { return good(in)[0]; }, {randn({3, 4}, 1)});
  INFO(r.str());
  CHECK(r.passed);
  CHECK(r.inputs.at(0).name == "input 0");
  CHECK(r.inputs.at(0).checked == 12);

  // Two outputs: (a * b, a + b), one input that takes no gradient (a mask).
  std::vector<bool> needs;  // what the last forward was told
  CustomOp two{.name = "two_outputs",
               .input_names = {"a", "b", "mask"},
               .forward =
                   [&needs](OpContext& ctx, const Tensors& in) {
                     ctx.save({in[0], in[1], in[2]});
                     needs = {ctx.needs_input_grad(0), ctx.needs_input_grad(1), ctx.needs_input_grad(2)};
                     return Tensors{in[0] * in[1] * in[2], in[0] + in[1]};
                   },
               // y0 = a * b * m, y1 = a + b   da += dy0 * b * m + dy1;  db += dy0 * a * m + dy1
               .backward =
                   [](const OpContext& ctx, Grads& g) {
                     const Tensor &a = ctx.saved(0), &b = ctx.saved(1), &m = ctx.saved(2);
                     if (g.needs(0)) g.dx(0).add_(g.dy(0) * b * m + g.dy(1));
                     if (g.needs(1)) g.dx(1).add_(g.dy(0) * a * m + g.dy(1));
                     CHECK_FALSE(g.needs(2));
                   }};
  Tensor mask = tensor({1, 0, 1}, Float64);
  two({randn({3}, 2), randn({3}, 3).detach(), mask});
  CHECK(needs == std::vector<bool>{true, false, false});
  {
    NoGradGuard no_grad;  // nothing is recorded, so no gradient will be asked for
    two({randn({3}, 2), randn({3}, 3), mask});
    CHECK(needs == std::vector<bool>{false, false, false});
  }
  GradcheckReport r2 = gradcheck([&](const Tensors& in) { return two({in[0], in[1], mask}); },
                                 {randn({3}, 2), randn({3}, 3)});
  INFO(r2.str());
  CHECK(r2.passed);
}

TEST_CASE("wrong backwards are caught, naming the input and the element") {
  Tensor x = randn({2, 3}, 4);
  SUBCASE("a dropped term: d(x tanh x) without x (1 - t²)") {
    CustomOp op{.name = "x_tanh_x",
                .input_names = {"x"},
                .forward =
                    [](OpContext& ctx, const Tensors& in) {
                      Tensor t = tanh(in[0]);
                      ctx.save({t});
                      return Tensors{in[0] * t};
                    },
                .backward = [](const OpContext& ctx, Grads& g) { g.dx(0).add_(g.dy() * ctx.saved(0)); }};
    GradcheckReport r = gradcheck([&](const Tensors& in) { return op(in)[0]; }, {x});
    CHECK_FALSE(r.passed);
    CHECK(failing(r, "input 0").failed == 6);
  }
  SUBCASE("a flipped sign: d(a - b)/db = +dy") {
    CustomOp op{.name = "difference",
                .input_names = {"a", "b"},
                .forward = [](OpContext&, const Tensors& in) { return Tensors{in[0] - in[1]}; },
                .backward =
                    [](const OpContext&, Grads& g) {
                      g.dx(0).add_(g.dy());
                      g.dx(1).add_(g.dy());  // must be -dy
                    }};
    GradcheckOptions o;
    o.names = {"a", "b"};
    GradcheckReport r = gradcheck([&](const Tensors& in) { return op(in)[0]; }, {x, randn({2, 3}, 5)}, o);
    CHECK(r.inputs.at(0).passed);
    const InputReport& b = failing(r, "b");
    CHECK(b.worst.analytic == doctest::Approx(-b.worst.numeric));
  }
  SUBCASE("a wrong derivative: 1 - t for 1 - t²") {
    CustomOp op = tanh_op("tanh_1_minus_t", [](const OpContext& ctx, Grads& g) {
      g.dx(0).add_(g.dy() * (1.0 - ctx.saved(0)));
    });
    GradcheckReport r = gradcheck([&](const Tensors& in) { return op(in)[0]; }, {x});
    CHECK(failing(r, "input 0").failed == 6);
    CHECK_FALSE(r.inputs[0].assigns_instead_of_adding);
  }
  SUBCASE("= for += with the input used once, by handle and by copy") {
    for (bool by_copy : {false, true}) {
      CustomOp op = tanh_op("assigning_tanh", [by_copy](const OpContext& ctx, Grads& g) {
        const Tensor& t = ctx.saved(0);
        Tensor d = g.dy() * (1.0 - t * t);  // the right value, assigned instead of added
        if (by_copy) g.dx(0).copy_(d);
        else g.dx(0) = d;
      });
      GradcheckReport r = gradcheck([&](const Tensors& in) { return op(in)[0]; }, {x});
      const InputReport& in = failing(r, "input 0");
      CHECK(in.assigns_instead_of_adding);
      CHECK(r.str().find("assigns (dx = ...) where it must add (dx += ...)") != std::string::npos);
      CHECK(r.first_wrong_node_summary() == "assigning_tanh: dL/dx is assigned, not added (dx = ... where dx += ... is needed)");
      // Without the seeded .grad the same op would pass: the seed is what catches it.
      GradcheckOptions plain;
      plain.check_accumulation = false;
      CHECK(gradcheck([&](const Tensors& in) { return op(in)[0]; }, {x}, plain).passed);
    }
  }
  SUBCASE("every gradient written into one slot") {
    CustomOp op = product_op([](const OpContext& ctx, Grads& g) {
      g.dx(0).add_(g.dy() * ctx.saved(1));
      g.dx(0).add_(g.dy() * ctx.saved(0));  // db's share, added to da
    });
    GradcheckOptions o;
    o.names = {"a", "b"};
    GradcheckReport r = gradcheck([&](const Tensors& in) { return op(in)[0]; }, {x, randn({2, 3}, 6)}, o);
    failing(r, "a");
    const InputReport& b = failing(r, "b");
    CHECK(b.worst.analytic == 0.0);
  }
  SUBCASE("a factor of 1.0001 at rtol 1e-6") {
    auto square = [](double factor) {
      return CustomOp{.name = "square",
                      .input_names = {"x"},
                      .forward =
                          [](OpContext& ctx, const Tensors& in) {
                            ctx.save({in[0]});
                            return Tensors{in[0] * in[0]};
                          },
                      .backward = [factor](const OpContext& ctx, Grads& g) {
                        g.dx(0).add_(g.dy() * ctx.saved(0) * (2.0 * factor));
                      }};
    };
    GradcheckOptions o;
    o.rtol = 1e-6;
    o.atol = 1e-9;
    CustomOp right = square(1.0), off = square(1.0001);
    CHECK(gradcheck([&](const Tensors& in) { return right(in)[0]; }, {x}, o).passed);
    GradcheckReport r = gradcheck([&](const Tensors& in) { return off(in)[0]; }, {x}, o);
    const InputReport& in = failing(r, "input 0");
    CHECK(in.failed == 6);
    CHECK(in.worst.rel_error == doctest::Approx(1e-4).epsilon(1e-3));
  }
}

TEST_CASE("the report lists at most K failing elements, with the count of all") {
  CustomOp op = tanh_op("half_tanh", [](const OpContext& ctx, Grads& g) {
    g.dx(0).add_(g.dy() * (1.0 - ctx.saved(0) * ctx.saved(0)) * 0.5);
  });
  GradcheckOptions o;
  o.max_reported = 3;
  GradcheckReport r = gradcheck([&](const Tensors& in) { return op(in)[0]; }, {randn({4, 5}, 7)}, o);
  const InputReport& in = r.inputs.at(0);
  CHECK(in.failed == 20);
  CHECK(in.failures.size() == 3);
  CHECK(in.failures[0].index == std::vector<std::int64_t>{0, 0});
  CHECK(in.failures[2].index == std::vector<std::int64_t>{0, 2});
  const std::string s = r.str();
  CHECK(s.find("20 of 20 elements wrong") != std::string::npos);
  CHECK(s.find("... and 17 more") != std::string::npos);
  CHECK(s.find("analytic") != std::string::npos);
  CHECK(s.find("tolerance") != std::string::npos);
  CHECK(s.find("rtol 0.001") != std::string::npos);
}

TEST_CASE("gradcheck refuses float32 and says why, and checks its options") {
  CHECK_THROWS_WITH_AS(gradcheck([](const Tensors& in) { return in[0]; }, {randn({2}, 1).to(Float32).requires_grad_()}),
                       "gradcheck: input 0 is float32; finite differences need float64 (convert with .to(attend::Float64))",
                       Error);
  Tensor x = randn({3}, 8);
  Tensor w32 = randn({3}, 9).to(Float32);
  // A float64 input through a function that computes in float32: the output says so.
  try {
    gradcheck([&](const Tensors& in) { return tanh(in[0].to(Float32) * w32); }, {x});
    FAIL("float32 output accepted");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("gradcheck: output 0 of fn is float32; finite differences in float32 are noise") == 0);
  }
  CHECK_FALSE(x.grad().defined());  // the caller's .grad is left as it was, even after an error
  GradcheckOptions bad;
  bad.eps = 0;
  CHECK_THROWS_WITH_AS(gradcheck([](const Tensors& in) { return in[0]; }, {x}, bad),
                       "gradcheck: eps must be positive and finite, got 0", Error);
  CHECK_THROWS_WITH_AS(gradcheck([](const Tensors& in) { return in[0] * in[1]; }, {x, x}),
                       "gradcheck: input 1 is the same tensor as input 0; pass it once", Error);
}

TEST_CASE("a backward that replaces dx with a tensor of another shape is an error naming the op") {
  CustomOp op{.name = "bad_shape",
              .input_names = {"x"},
              .forward = [](OpContext&, const Tensors& in) { return Tensors{in[0] * 2.0}; },
              .backward = [](const OpContext&, Grads& g) { g.dx(0) = sum(g.dy()); }};
  Tensor x = randn({3}, 10);
  CHECK_THROWS_WITH_AS(sum(op({x})[0]).backward(),
                       "backward of 'bad_shape': the gradient of x is float64 [] but the input is float64 [3]; a "
                       "backward must add into g.dx(i), which has the input's shape and dtype, never replace it",
                       Error);
}

TEST_CASE("custom ops check their definition") {
  Tensor x = randn({2}, 11);
  CHECK_THROWS_WITH_AS((CustomOp{.name = "", .forward = {}, .backward = {}}({x})),
                       "custom op: give the op a name (CustomOp::name)", Error);
  CustomOp none{.name = "none",
                .forward = [](OpContext&, const Tensors&) { return Tensors{}; },
                .backward = [](const OpContext&, Grads&) {}};
  CHECK_THROWS_WITH_AS(none({x}), "custom op 'none': forward returned no tensors", Error);
  CustomOp unsaved{.name = "unsaved",
                   .forward = [](OpContext&, const Tensors& in) { return Tensors{in[0] * 1.0}; },
                   .backward = [](const OpContext& ctx, Grads& g) { g.dx(0).add_(ctx.saved(0)); }};
  CHECK_THROWS_WITH_AS(sum(unsaved({x})[0]).backward(),
                       "unsaved: ctx.saved(0) but the forward saved 0 tensor(s); save them with ctx.save({...})", Error);
  // Returning an input as it is gives a new tensor: the input itself stays a leaf.
  CustomOp identity{.name = "identity",
                    .forward = [](OpContext&, const Tensors& in) { return Tensors{in[0], in[0]}; },
                    .backward =
                        [](const OpContext&, Grads& g) {
                          g.dx(0).add_(g.dy(0));
                          g.dx(0).add_(g.dy(1));
                        }};
  Tensors ys = identity({x});
  CHECK(x.is_leaf());
  CHECK_FALSE(ys[0].same(ys[1]));
  CHECK(gradcheck([&](const Tensors& in) { return identity(in); }, {x}).passed);
}
