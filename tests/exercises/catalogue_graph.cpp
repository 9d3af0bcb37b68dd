// Exercise 2: topological_order and backward on a tiny graph of scalars,
// graded by gradcheck and against attend's own engine on the same expression.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include <fmt/format.h>

#include "tests/exercises/exercises.hpp"
#include "tests/exercises/grader.hpp"

namespace attend::exercises::grader {

namespace {

// The expression, in an order where every node comes after what it reads:
//   u = x0 x1,  s = u + x2,  v = tanh(s),  w = v u,  e = exp(x0),  r = w + e,  out = r v
// u, v and x0 are each read twice, so their gradients are sums.
struct Spec {
  Op op;
  int a, b;
  const char* name;
};
constexpr int kNodes = 10, kLeaves = 3, kRoot = 9;
constexpr Spec kSpec[kNodes] = {{Op::Leaf, -1, -1, "x0"}, {Op::Leaf, -1, -1, "x1"}, {Op::Leaf, -1, -1, "x2"},
                                {Op::Mul, 0, 1, "u = x0 x1"},  {Op::Add, 3, 2, "s = u + x2"},
                                {Op::Tanh, 4, -1, "v = tanh(s)"}, {Op::Mul, 5, 3, "w = v u"},
                                {Op::Exp, 0, -1, "e = exp(x0)"}, {Op::Add, 6, 7, "r = w + e"},
                                {Op::Mul, 8, 5, "out = r v"}};

double eval(Op op, double a, double b) {
  switch (op) {
    case Op::Add: return a + b;
    case Op::Mul: return a * b;
    case Op::Div: return a / b;
    case Op::Tanh: return std::tanh(a);
    case Op::Exp: return std::exp(a);
    case Op::Leaf: break;
  }
  return a;
}

// Where each node of the spec is stored: shuffled, with the root first, so
// that storage order is never a topological order.
struct Layout {
  std::vector<int> at;  // spec index -> position in the graph
  std::vector<int> spec_of;  // position -> spec index

  explicit Layout(Generator& gen) : at(kNodes), spec_of(kNodes) {
    std::vector<int> rest(kNodes - 1);
    std::iota(rest.begin(), rest.end(), 1);
    for (int i = kNodes - 2; i > 0; --i) std::swap(rest[i], rest[gen.randint(i + 1)]);
    at[kRoot] = 0;
    for (int c = 0, k = 0; c < kNodes; ++c)
      if (c != kRoot) at[c] = rest[k++];
    for (int c = 0; c < kNodes; ++c) spec_of[at[c]] = c;
  }

  std::vector<Scalar> build(const std::vector<double>& leaves) const {
    std::vector<double> value(kNodes);
    for (int c = 0; c < kNodes; ++c) {
      const Spec& s = kSpec[c];
      value[c] = s.op == Op::Leaf ? leaves[c] : eval(s.op, value[s.a], s.b >= 0 ? value[s.b] : 0);
    }
    std::vector<Scalar> graph(kNodes);
    for (int c = 0; c < kNodes; ++c) {
      const Spec& s = kSpec[c];
      graph[at[c]] = Scalar{s.op, s.a >= 0 ? at[s.a] : -1, s.b >= 0 ? at[s.b] : -1, value[c], 0};
    }
    return graph;
  }
  int root() const { return at[kRoot]; }
  std::string describe(int position) const {
    return fmt::format("node {} ({})", position, kSpec[spec_of[position]].name);
  }
};

// The learner's order: every node once, each after what it reads.
Verdict check_order(const Layout& layout, const std::vector<double>& leaves) {
  const std::vector<Scalar> graph = layout.build(leaves);
  const std::vector<int> order = topological_order(graph, layout.root());
  if (order.empty())
    return {"nothing was written: write topological_order and backward in tests/exercises/answers.cpp", false, false};
  std::vector<int> position(kNodes, -1);
  for (std::size_t k = 0; k < order.size(); ++k) {
    const int n = order[k];
    if (n < 0 || n >= kNodes) return {fmt::format("topological_order: {} is not a node (0 to {})", n, kNodes - 1), false};
    if (position[n] >= 0) return {fmt::format("topological_order: {} is listed twice", layout.describe(n)), false};
    position[n] = static_cast<int>(k);
  }
  for (int n = 0; n < kNodes; ++n)
    if (position[n] < 0)
      return {fmt::format("topological_order: {} is missing; the root depends on it", layout.describe(n)), false};
  for (int n = 0; n < kNodes; ++n)
    for (int input : {graph[n].a, graph[n].b})
      if (input >= 0 && position[input] > position[n])
        return {fmt::format("topological_order: {} comes before {}, which it reads", layout.describe(n),
                            layout.describe(input)),
                false};
  return {};
}

// The same expression through attend's engine: its leaf gradients against the learner's.
Verdict check_engine(const Layout& layout, const std::vector<double>& leaves) {
  std::vector<Tensor> node(kNodes);
  for (int c = 0; c < kNodes; ++c) {
    const Spec& s = kSpec[c];
    if (s.op == Op::Leaf) node[c] = scalar(leaves[c], Float64).requires_grad_();
    else if (s.op == Op::Add) node[c] = node[s.a] + node[s.b];
    else if (s.op == Op::Mul) node[c] = node[s.a] * node[s.b];
    else if (s.op == Op::Tanh) node[c] = tanh(node[s.a]);
    else node[c] = exp(node[s.a]);
  }
  node[kRoot].backward();
  std::vector<Scalar> graph = layout.build(leaves);
  backward(graph, layout.root());
  double worst = 0;
  for (int c = 0; c < kLeaves; ++c) worst = std::max(worst, std::abs(node[c].grad().item() - graph[layout.at[c]].grad));
  if (worst > 1e-12)
    return {fmt::format("your leaf gradients differ from attend's engine (autograd/engine.cpp) by {:.1e}", worst), false};
  return {fmt::format("the same leaf gradients as attend's engine: max |Δ| = {:.1e}", worst)};
}

}  // namespace

std::vector<Exercise> graph_exercises(Generator& gen) {
  auto layout = std::make_shared<Layout>(gen);
  Tensor x = draw(gen, {kLeaves}, 0.7);
  auto at = std::make_shared<Attempt>();
  at->names = {"x"};
  CustomOp op{.name = "graph_backward",
              .input_names = {"x"},
              .forward =
                  [layout](OpContext& ctx, const Tensors& in) {
                    const std::vector<Scalar> graph = layout->build(in[0].to_vector());
                    ctx.save({in[0]});
                    return Tensors{tensor({graph[layout->root()].value}, {1}, Float64)};
                  },
              .backward =
                  [layout, at](const OpContext& ctx, Grads& g) {
                    run_answer(*at, {&g.dx(0)}, [&](Tensors& d) {
                      std::vector<Scalar> graph = layout->build(ctx.saved(0).to_vector());
                      backward(graph, layout->root());
                      const double dy = g.dy().item();
                      double* dx = d[0].data<double>();
                      for (int c = 0; c < kLeaves; ++c) dx[c] += dy * graph[layout->at[c]].grad;
                    });
                  }};
  Exercise e{"graph_backward",
             {"a node's grad is complete only when every node that reads it has passed its share back; so visit "
              "the nodes so that each comes after all of its readers, and add, since a node read twice gets two "
              "shares",
              "order: a depth-first search that appends a node after visiting what it reads; backward: set the "
              "root's grad, then for each node of the order read backwards call scalar_backward(op, a, b, value, "
              "grad, graph[a].grad, graph[b].grad)",
              "visit(n): if seen, return; mark; visit(a); visit(b); order.push_back(n). backward: graph[root].grad "
              "+= 1; for n in reverse(order), not a leaf: scalar_backward(n.op, graph[n.a].value, graph[n.b].value "
              "(0 without b), n.value, n.grad, graph[n.a].grad, graph[n.b].grad)"},
             {},
             nullptr,
             nullptr};
  Check c{"", [op](const Tensors& in) { return op(in); }, {x}, at};
  e.checks.push_back(c);
  const std::vector<double> leaves = x.to_vector();
  e.before = [layout, leaves] { return check_order(*layout, leaves); };
  e.after = [layout, leaves] { return check_engine(*layout, leaves); };
  return {e};
}

}  // namespace attend::exercises::grader
