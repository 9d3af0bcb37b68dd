// gradcheck's per-node mode: "the gradient is wrong somewhere" becomes "this op
// is wrong". fn runs once under ReplayMode, so that every op it records keeps a
// way to run its forward again (Node::replay). Then each node, in forward
// order, is checked on its own: its inputs, as they were in that run, become
// fresh float64 leaves, its replay is the function, and the comparison of
// gradcheck.cpp runs on it.
#include "autograd/gradcheck/gradcheck.hpp"
#include "autograd/grad_mode.hpp"

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

}  // namespace

void check_nodes(const MultiOutputFn& fn, const Tensors& inputs, const GradcheckOptions& options,
                 GradcheckReport& report) {
  Tensors roots;
  {
    EnableGradGuard enable_grad;
    ReplayGuard replay;
    for (const Tensor& y : fn(inputs))
      if (y.defined() && y.requires_grad()) roots.push_back(y);
  }
  if (roots.empty()) return;
  int position = 0;
  for (const auto& node : graph_nodes(roots)) {
    NodeReport nr = check_node(*node, ++position, options);
    if (!nr.passed) report.passed = false;
    report.nodes.push_back(std::move(nr));
  }
}

}  // namespace attend::gradcheck_detail
