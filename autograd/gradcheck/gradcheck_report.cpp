// gradcheck's report as text: what a test prints when a gradient is wrong.
#include <algorithm>
#include <cmath>

#include "autograd/gradcheck/gradcheck.hpp"

namespace attend {

namespace {

std::string index_text(const ElementCheck& c) {
  return c.index.empty() ? std::string("direction") : fmt::format("[{}]", fmt::join(c.index, ", "));
}

// "12 elements", "1 direction"
std::string count(std::int64_t n, bool directional) {
  return fmt::format("{} {}{}", n, directional ? "direction" : "element", n == 1 ? "" : "s");
}

// One input's lines; `label` stands before its name ("dL/d" in per-node lines).
void append_input(std::string& out, const InputReport& r, bool directional, const std::string& indent,
                  const std::string& label = "") {
  if (r.passed) {
    out += fmt::format("{}{}{} {}: passed ({}; max abs error {:.2e}, max rel error {:.2e})\n", indent, label, r.name,
                       r.shape, count(r.checked, directional), r.max_abs_error, r.max_rel_error);
    return;
  }
  out += fmt::format("{}{}{} {}: {} of {} wrong; max abs error {:.2e}, max rel error {:.2e}\n", indent, label, r.name,
                     r.shape, r.failed, count(r.checked, directional), r.max_abs_error, r.max_rel_error);
  out += fmt::format("{}    {:>16} {:>15} {:>15} {:>10} {:>10} {:>10}\n", indent, "index", "analytic", "numeric",
                     "abs error", "rel error", "tolerance");
  for (const ElementCheck& c : r.failures)
    out += fmt::format("{}    {:>16} {:>15.8g} {:>15.8g} {:>10.3e} {:>10.3e} {:>10.3e}\n", indent, index_text(c),
                       c.analytic, c.numeric, c.abs_error, c.rel_error, c.tolerance);
  if (r.failed > static_cast<std::int64_t>(r.failures.size()))
    out += fmt::format("{}    ... and {} more\n", indent, r.failed - static_cast<std::int64_t>(r.failures.size()));
  const ElementCheck& w = r.worst;
  out += fmt::format("{}    worst: {}{} analytic {:.8g}, numeric {:.8g}\n", indent, r.name,
                     w.index.empty() ? std::string(" along a random direction:") : index_text(w) + ":", w.analytic,
                     w.numeric);
  if (r.assigns_instead_of_adding)
    out += fmt::format(
        "{}    hint: the gradient already in the slot was lost; the backward assigns (dx = ...) where it must add "
        "(dx += ...)\n",
        indent);
}

std::string wrong_input_summary(const NodeReport& n) {
  for (const InputReport& r : n.inputs) {
    if (r.passed) continue;
    if (r.assigns_instead_of_adding)
      return fmt::format("{}: dL/d{} is assigned, not added (dx = ... where dx += ... is needed)", n.op, r.name);
    return fmt::format("{}: dL/d{} wrong at {} (analytic {:.6g}, numeric {:.6g})", n.op, r.name,
                       index_text(r.worst), r.worst.analytic, r.worst.numeric);
  }
  return fmt::format("{}: {}", n.op, n.note);
}

// "my_softmax: dL/dx is assigned, not added (dx = ... where dx += ... is needed)"
std::string fault_summary(const AccumulationFault& f) {
  if (f.assigns())
    return fmt::format("{}: dL/d{} is assigned, not added (dx = ... where dx += ... is needed)", f.op, f.input);
  return fmt::format("{}: dL/d{} changes what its slot held; a backward must only add (dx += ...)", f.op, f.input);
}

void append_accumulation(std::string& out, const GradcheckReport& r) {
  if (!r.accumulation_faults.empty()) {
    out += fmt::format("accumulation check (each of {} op(s) run again on its own, its inputs' slots seeded):\n",
                       r.accumulation_checked);
    for (const AccumulationFault& f : r.accumulation_faults) {
      out += fmt::format(
          "  {:>3}. {:<28} dL/d{} at [{}]: the slot held {:.8g} and ends at {:.8g}; the backward leaves {:.8g} in "
          "an empty slot, so {:.8g} was due\n",
          f.position, f.op, f.input, fmt::join(f.index, ", "), f.seed, f.result, f.added, f.seed + f.added);
      out += f.assigns()
                 ? "        hint: the backward assigns (dx = ...) where it must add (dx += ...)\n"
                 : "        hint: the backward changes what the slot held (dx *= ...); it must only add (dx += ...)\n";
    }
  }
  if (r.accumulation_unchecked > 0)
    out += fmt::format("{} op(s) not run again for the accumulation check (no replay)\n", r.accumulation_unchecked);
}

}  // namespace

bool AccumulationFault::assigns() const { return std::abs(result - added) <= 1e-6 * (1 + std::abs(added)); }

double GradcheckReport::max_abs_error() const {
  double m = 0;
  for (const auto& r : inputs) m = std::isnan(r.max_abs_error) ? NAN : std::max(m, r.max_abs_error);
  return m;
}

double GradcheckReport::max_rel_error() const {
  double m = 0;
  for (const auto& r : inputs) m = std::isnan(r.max_rel_error) ? NAN : std::max(m, r.max_rel_error);
  return m;
}

const NodeReport* GradcheckReport::first_wrong_node() const {
  for (const NodeReport& n : nodes)
    if (n.checked && !n.passed) return &n;
  return nullptr;
}

std::string GradcheckReport::first_wrong_node_summary() const {
  if (const NodeReport* n = first_wrong_node()) return wrong_input_summary(*n);
  return accumulation_faults.empty() ? std::string() : fault_summary(accumulation_faults.front());
}

std::string GradcheckReport::str() const {
  std::string out = fmt::format("gradcheck {} ({}; eps {:g}, atol {:g}, rtol {:g})\n", passed ? "passed" : "FAILED",
                                mode, eps, atol, rtol);
  const bool directional = mode != "every element";
  for (const InputReport& r : inputs) append_input(out, r, directional, "  ");
  append_accumulation(out, *this);
  if (nodes.empty()) {
    if (!accumulation_faults.empty()) out += "first wrong op: " + first_wrong_node_summary() + "\n";
    return out;
  }
  int unchecked = 0;
  out += "per-node check (each op on its own, in forward order):\n";
  for (const NodeReport& n : nodes) {
    if (!n.checked) {
      ++unchecked;
      out += fmt::format("  {:>3}. {:<28} {}\n", n.position, n.op, n.note);
    } else if (n.passed) {
      out += fmt::format("  {:>3}. {:<28} passed\n", n.position, n.op);
    } else {
      out += fmt::format("  {:>3}. {:<28} WRONG{}\n", n.position, n.op, n.note.empty() ? "" : ": " + n.note);
      for (const InputReport& r : n.inputs)
        if (!r.passed) append_input(out, r, directional, "        ", "dL/d");
    }
  }
  const std::string first = first_wrong_node_summary();
  if (!first.empty()) out += "first wrong op: " + first + "\n";
  else if (!passed) out += "every op passed on its own: look at how fn combines them (or at unchecked ops)\n";
  if (unchecked > 0) out += fmt::format("{} op(s) not checked\n", unchecked);
  return out;
}

}  // namespace attend
