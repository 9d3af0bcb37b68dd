// The exercises of exercises.hpp as the grader runs them: each answer becomes
// the backward of a custom op whose forward is attend's own, on inputs drawn
// from the run's seed, with its three hints.
#include <cmath>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "tests/exercises/exercises.hpp"
#include "tests/exercises/grader.hpp"

namespace attend::exercises::grader {

namespace {

Check make_check(std::string label, const CustomOp& op, Tensors args) {
  Check c{std::move(label), [op](const Tensors& in) { return op(in); }, std::move(args), nullptr};
  return c;
}

std::shared_ptr<Attempt> attempt_for(const std::vector<std::string>& names) {
  auto at = std::make_shared<Attempt>();
  at->names = names;
  return at;
}

// The slots of every input, in order.
std::vector<Tensor*> all_slots(Grads& g, std::size_t n) {
  std::vector<Tensor*> slots;
  for (std::size_t i = 0; i < n; ++i) slots.push_back(&g.dx(static_cast<int>(i)));
  return slots;
}

// ---- 1. scalar_backward: each op on its own, elementwise over 4 values -------

const char* op_name(Op op) {
  switch (op) {
    case Op::Add: return "Op::Add";
    case Op::Mul: return "Op::Mul";
    case Op::Div: return "Op::Div";
    case Op::Tanh: return "Op::Tanh";
    case Op::Exp: return "Op::Exp";
    case Op::Leaf: break;
  }
  return "Op::Leaf";
}

Tensor apply(Op op, const Tensor& a, const Tensor& b) {
  switch (op) {
    case Op::Add: return a + b;
    case Op::Mul: return a * b;
    case Op::Div: return a / b;
    case Op::Tanh: return tanh(a);
    case Op::Exp: return exp(a);
    case Op::Leaf: break;
  }
  return a;
}

Check scalar_check(Op op, Generator& gen) {
  const bool unary = op == Op::Tanh || op == Op::Exp;
  Tensor a = draw(gen, {4});
  Tensor b = draw(gen, {4});
  if (op == Op::Div) {  // |b| in [0.5, 1.5): away from the pole
    std::vector<double> v(4);
    for (double& x : v) x = (gen.uniform() < 0.5 ? -1 : 1) * gen.uniform(0.5, 1.5);
    b = tensor(v, {4}, Float64).requires_grad_();
  }
  std::vector<std::string> names = unary ? std::vector<std::string>{"a"} : std::vector<std::string>{"a", "b"};
  auto at = attempt_for(names);
  CustomOp custom{.name = std::string("scalar ") + op_name(op),
                  .input_names = names,
                  .forward =
                      [op, unary](OpContext& ctx, const Tensors& in) {
                        Tensor y = apply(op, in[0], unary ? in[0] : in[1]);
                        ctx.save({in[0], unary ? zeros_like(in[0]) : in[1], y});
                        return Tensors{y};
                      },
                  .backward =
                      [op, unary, at](const OpContext& ctx, Grads& g) {
                        run_answer(*at, all_slots(g, unary ? 1 : 2), [&](Tensors& d) {
                          const double *a = ctx.saved(0).data<double>(), *b = ctx.saved(1).data<double>();
                          const double *y = ctx.saved(2).data<double>(), *dy = g.dy().data<double>();
                          double* da = d[0].data<double>();
                          double* db = unary ? nullptr : d[1].data<double>();
                          for (std::int64_t n = 0; n < 4; ++n) {
                            double unused = 0;
                            scalar_backward(op, a[n], b[n], y[n], dy[n], da[n], db ? db[n] : unused);
                          }
                        });
                      }};
  Check c = make_check(fmt::format(" ({})", op_name(op)), custom, unary ? Tensors{a} : Tensors{a, b});
  c.attempt = at;
  return c;
}

Exercise scalar_exercise(Generator& gen) {
  Exercise e{"scalar_backward",
             {"the chain rule for one op: how much y moves when a moves a little (∂y/∂a), times how much L moves "
              "when y does (dy); the same for b",
              "da += dy * (∂y/∂a), db += dy * (∂y/∂b); ∂y/∂a of a product is the other factor, and tanh and exp "
              "have derivatives you can write with y itself",
              "add: 1 and 1; mul: b and a; div: 1/b and −a/b²; tanh: 1 − y²; exp: y"},
             {},
             nullptr,
             nullptr};
  for (Op op : {Op::Add, Op::Mul, Op::Div, Op::Tanh, Op::Exp}) e.checks.push_back(scalar_check(op, gen));
  return e;
}

}  // namespace

std::vector<Exercise> catalogue(std::uint64_t seed) {
  Generator gen(seed);
  std::vector<Exercise> all{scalar_exercise(gen)};
  for (Exercise& e : graph_exercises(gen)) all.push_back(std::move(e));
  for (Exercise& e : tensor_exercises(gen)) all.push_back(std::move(e));
  return all;
}

}  // namespace attend::exercises::grader
