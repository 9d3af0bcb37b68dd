// gradcheck's per-node mode: "the gradient is wrong somewhere" becomes "this op
// is wrong". fn runs once under ReplayMode, so that every op it records keeps a
// way to run its forward again (Node::replay). Then each node, in forward
// order, is checked on its own: its inputs, as they were in that run, become
// fresh float64 leaves, its replay is the function, and the comparison of
// gradcheck.cpp runs on it.
// The accumulation check re-runs every node the same way, without finite
// differences, to see that its backward adds into its inputs' slots.
#include <cmath>
#include <optional>

#include "autograd/gradcheck/gradcheck.hpp"
#include "autograd/grad_mode.hpp"
#include "core/random.hpp"

namespace attend::gradcheck_detail {

namespace {

// Re-running the node must record the same op again: a replay that called
// another op would check that op's backward instead.
std::string replay_mismatch(const Node& node, const Tensors& leaves) {
  EnableGradGuard enable_grad;
  ReplayGuard no_replay(false);
  const Tensors outs = node.replay()(leaves);
  if (outs.size() != node.output_shapes().size())
    return fmt::format("its replay returned {} outputs, the op has {}", outs.size(), node.output_shapes().size());
  Tensors roots;
  for (std::size_t k = 0; k < outs.size(); ++k) {
    if (!outs[k].defined() || !(outs[k].shape() == node.output_shapes()[k]))
      return fmt::format("its replay's output {} has another shape than the op's", k);
    if (outs[k].requires_grad()) roots.push_back(outs[k]);
  }
  // The op itself must be in what the replay recorded (a replay may add ops
  // around it, as embedding's does to hold its padding row constant).
  std::string recorded;
  for (const auto& n : graph_nodes(roots)) {
    if (std::string(n->name()) == node.name()) return "";
    recorded += (recorded.empty() ? "'" : ", '") + std::string(n->name()) + "'";
  }
  return fmt::format("its replay records {}, not '{}'", recorded.empty() ? "nothing" : recorded, node.name());
}

NodeReport check_node(const Node& node, int position, const GradcheckOptions& options) {
  NodeReport nr;
  nr.position = position;
  nr.op = node.name();
  if (!node.replay()) {
    nr.note = "not checked: the op keeps no replay (record(...).replay(...) in its forward)";
    return nr;
  }
  Tensors leaves;
  GradcheckOptions sub = options;
  sub.per_node = false;
  sub.names.clear();
  bool any = false;
  for (std::size_t i = 0; i < node.inputs().size(); ++i) {
    const Tensor& in = node.inputs()[i];
    if (!in.defined()) {
      nr.note = fmt::format("not checked: input {} is undefined", node.input_name(i));
      return nr;
    }
    if (in.dtype() != Float64) {
      nr.note = fmt::format("not checked: {} is {} (finite differences need float64)", node.input_name(i), in.dtype());
      return nr;
    }
    Tensor leaf = in.detach().clone();  // the value this op saw, as a leaf of its own
    if (in.requires_grad()) {
      leaf.requires_grad_();
      any = true;
    }
    leaves.push_back(leaf);
    sub.names.push_back(node.input_name(i));
  }
  if (!any) {
    nr.note = "not checked: no input requires grad";
    return nr;
  }
  try {
    const std::string mismatch = replay_mismatch(node, leaves);
    if (!mismatch.empty()) {
      nr.checked = true;
      nr.passed = false;
      nr.note = mismatch;
      return nr;
    }
    GradcheckReport r = compare(node.replay(), leaves, sub);
    if (!r.passed && sub.directions > 0) {  // a direction says that it is wrong; every element says where
      sub.directions = 0;
      r = compare(node.replay(), leaves, sub);
    }
    nr.checked = true;
    nr.passed = r.passed;
    nr.inputs = std::move(r.inputs);
  } catch (const Error& e) {
    nr.checked = true;
    nr.passed = false;
    nr.note = e.what();
  }
  return nr;
}

// An element keeps its seed when result = seed + added up to rounding: the
// two backwards sum the same terms, one of them starting from the seed.
bool keeps_seed(double seed, double added, double result, DType dtype) {
  const double tolerance = (dtype == Float64 ? 1e-7 : 1e-3) * (1 + std::abs(seed) + std::abs(added));
  return std::abs(result - (seed + added)) <= tolerance;  // false for NaN too
}

// Where the backward into a slot seeded with `seed` (now `result`) did not add
// what it leaves in an empty slot (`added`, undefined when it left nothing).
std::optional<AccumulationFault> lost_seed(const Tensor& seed, const Tensor& added, const Tensor& result) {
  return dispatch(seed.dtype(), [&](auto zero) -> std::optional<AccumulationFault> {
    using T = decltype(zero);
    const T *ps = seed.data<T>(), *pa = added.defined() ? added.data<T>() : nullptr, *pr = result.data<T>();
    for (std::int64_t j = 0, n = seed.numel(); j < n; ++j) {
      const double s = ps[j], a = pa ? double(pa[j]) : 0.0, r = pr[j];
      if (keeps_seed(s, a, r, seed.dtype())) continue;
      AccumulationFault fault;
      fault.index.resize(static_cast<std::size_t>(seed.dim()));
      for (std::int64_t d = seed.dim() - 1, flat = j; d >= 0; --d) {  // j as a multi-index
        fault.index[d] = flat % seed.size(d);
        flat /= seed.size(d);
      }
      fault.seed = s;
      fault.added = a;
      fault.result = r;
      return fault;
    }
    return std::nullopt;
  });
}

// One op's accumulation check: its inputs, as they were, become fresh leaves;
// its replay runs on them; one backward with upstream gradients R leaves g in
// their empty .grad, and a second, with .grad seeded with S, must leave S + g.
// Adds a fault per input that does not; false when nothing could be run.
bool accumulation_of(const Node& node, int position, Generator& gen, GradcheckReport& report) {
  Tensors leaves;
  for (const Tensor& in : node.inputs()) {
    if (!in.defined()) return false;
    Tensor leaf = in.detach().clone();
    if (in.requires_grad()) leaf.requires_grad_();
    leaves.push_back(leaf);
  }
  EnableGradGuard enable_grad;
  ReplayGuard no_replay(false);
  Tensors roots, upstream;
  for (const Tensor& y : node.replay()(leaves))
    if (y.defined() && y.requires_grad()) {
      roots.push_back(y);
      upstream.push_back(normal(y.shape(), 0.0, 1.0, gen, y.dtype()));
    }
  if (roots.empty()) return false;
  backward(roots, upstream, /*retain_graph=*/true);
  Tensors added(leaves.size()), seeds(leaves.size());
  for (std::size_t i = 0; i < leaves.size(); ++i) {
    if (!leaves[i].requires_grad()) continue;
    if (leaves[i].grad().defined()) added[i] = leaves[i].grad().clone();
    seeds[i] = normal(leaves[i].shape(), 0.0, 1.0, gen, leaves[i].dtype());
    leaves[i].set_grad(seeds[i].clone());
  }
  backward(roots, upstream);
  for (std::size_t i = 0; i < leaves.size(); ++i) {
    if (!seeds[i].defined()) continue;
    std::optional<AccumulationFault> fault = lost_seed(seeds[i], added[i], leaves[i].grad());
    if (!fault) continue;
    fault->position = position;
    fault->op = node.name();
    fault->input = node.input_name(i);
    report.accumulation_faults.push_back(std::move(*fault));
  }
  return true;
}

// The check of one op, or false when it cannot be re-run here (no replay, or
// a replay that fails on its own; the per-node check says why).
bool check_node_accumulation(const Node& node, int position, Generator& gen, GradcheckReport& report) {
  if (!node.replay()) return false;
  try {
    return accumulation_of(node, position, gen, report);
  } catch (const Error&) {
    return false;
  }
}

// fn's outputs that require grad, from one run in which every op it records
// keeps its replay.
Tensors replayable_roots(const MultiOutputFn& fn, const Tensors& inputs) {
  EnableGradGuard enable_grad;
  ReplayGuard replay;
  Tensors roots;
  for (const Tensor& y : fn(inputs))
    if (y.defined() && y.requires_grad()) roots.push_back(y);
  return roots;
}

}  // namespace

void check_accumulation(const MultiOutputFn& fn, const Tensors& inputs, const GradcheckOptions& options,
                        GradcheckReport& report) {
  const Tensors roots = replayable_roots(fn, inputs);
  Generator gen(options.seed ^ 0x5eed5eedULL);  // other draws than compare's
  int position = 0;
  for (const auto& node : graph_nodes(roots)) {
    if (check_node_accumulation(*node, ++position, gen, report)) ++report.accumulation_checked;
    else ++report.accumulation_unchecked;
  }
  if (!report.accumulation_faults.empty()) report.passed = false;
}

void check_nodes(const MultiOutputFn& fn, const Tensors& inputs, const GradcheckOptions& options,
                 GradcheckReport& report) {
  const Tensors roots = replayable_roots(fn, inputs);
  if (roots.empty()) return;
  int position = 0;
  for (const auto& node : graph_nodes(roots)) {
    NodeReport nr = check_node(*node, ++position, options);
    if (!nr.passed) report.passed = false;
    report.nodes.push_back(std::move(nr));
  }
}

}  // namespace attend::gradcheck_detail
