#pragma once
// gradcheck: compares the gradients backward() computes with central finite
// differences, and says precisely where they disagree.
//
//   auto report = attend::gradcheck([](const attend::Tensors& in) { return tanh(in[0]); },
//                                   {attend::normal({3, 4}, 0, 1, gen, Float64).requires_grad_()});
//   CHECK_MESSAGE(report.passed, report.str());      // or CHECK_GRADIENTS, <attend/doctest.hpp>
//
// What it differentiates: L = sum_k sum(y_k * R_k) with a random upstream
// gradient R_k for every output y_k (never a plain sum, which would hide
// errors that cancel over the elements of y).
//
// What it catches, beyond a wrong formula:
// - Accumulation errors. Before the backward, every input's .grad is seeded
//   with random values G; the analytic gradient is .grad - G afterwards. A
//   backward that assigns (dx = ...) where it must add (dx += ...) wipes G out,
//   even when the input is used only once, and the report says so.
//   Inside fn the engine hands an op whose input is an intermediate with one
//   consumer a zeroed slot, where an assignment gives the right numbers. So,
//   pass or fail, every op fn records is also run again on its own (Node::replay)
//   with its inputs' slots seeded with S: its backward must leave S + g where
//   it leaves g in empty slots. The report names the op that does not.
// - Which op is wrong. When the check fails, each op recorded by fn is checked
//   on its own (per-node mode): its inputs become leaves, its forward runs
//   again (Node::replay) and its backward is compared with finite differences.
//   The report names the first one that disagrees, with its input and element:
//   "additive_attention_step: dL/dkeys wrong at [0, 2, 1]".
//
// Modes: every element of every input (exact, 2 forward passes per element),
// or `directions` random directions per input (vᵀ∇L against the directional
// difference, 2 passes per direction), which checks a whole model in seconds.
//
// float64 only: inputs and outputs must be float64. A central difference in
// float32 is noise: with eps = 1e-6 the perturbation is below float32's
// resolution near 1 (6e-8), and any eps large enough to be seen makes a
// truncation error of order eps². gradcheck refuses such a function, saying
// how to convert it (.to(Float64), Module::to(Float64)).
//
// Inputs are perturbed in place and restored, so parameters captured inside fn
// (a layer's weights) can be passed as inputs too. Their .grad is restored.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "autograd/node.hpp"
#include "core/tensor.hpp"

namespace attend {

struct GradcheckOptions {
  double eps = 1e-6;   // finite-difference step
  double atol = 1e-5;  // an element passes when |analytic - numeric| <= atol + rtol * |numeric|
  double rtol = 1e-3;
  std::uint64_t seed = 0;  // for the random upstream gradients, the seeds in .grad and the directions
  // 0: every element of every input; N > 0: N random directions per input.
  int directions = 0;
  // Failing elements listed per input (the count of all of them is reported too).
  int max_reported = 10;
  // Seed each input's .grad before the backward, and every recorded op's input
  // slots in a run of its own, to catch dx = ... for dx += ...
  bool check_accumulation = true;
  // When the check fails, check every op that fn records on its own.
  bool per_node = true;
  // Names of the inputs in the report ("encoder.weight_hh_l0"); "input i" where missing.
  std::vector<std::string> names;
};

// One compared element (or, in directional mode, one direction).
struct ElementCheck {
  std::vector<std::int64_t> index;  // multi-index in the input; empty for a direction
  double analytic = 0, numeric = 0;
  double abs_error = 0, rel_error = 0;  // rel_error = abs_error / |numeric| (0 when numeric is 0)
  double tolerance = 0;                 // what abs_error had to stay within
};

struct InputReport {
  int input = 0;     // position in the inputs given to gradcheck
  std::string name;  // options.names[input], or "input 0"
  Shape shape;
  bool passed = true;
  std::int64_t checked = 0;  // elements (or directions) compared
  std::int64_t failed = 0;   // how many of them are out of tolerance
  double max_abs_error = 0, max_rel_error = 0;
  ElementCheck worst;                 // the one furthest out of (or nearest to) its tolerance
  std::vector<ElementCheck> failures;  // the first options.max_reported failing ones
  // The backward threw away what was already in .grad: it assigns where it must add.
  bool assigns_instead_of_adding = false;
};

// Per-node mode: one recorded op of fn, checked on its own.
struct NodeReport {
  int position = 0;  // in forward order, from 1
  std::string op;
  bool checked = false;  // false: it could not be re-run (see note)
  bool passed = true;
  std::string note;      // why it was not checked, or what is wrong
  std::vector<InputReport> inputs;
};

// An op whose backward does not add into the gradient slot of an input: found
// by running the op's backward into the seeded slot and into an empty one.
struct AccumulationFault {
  int position = 0;  // of the op in forward order, from 1 (as in NodeReport)
  std::string op;
  std::string input;                 // the input's name ("x", or "input 0")
  std::vector<std::int64_t> index;   // the first element where the seed was not kept
  double seed = 0;    // what the slot held before the backward
  double added = 0;   // what the backward leaves in an empty slot
  double result = 0;  // what it left in the seeded one: seed + added if it adds
  bool assigns() const;  // result == added: the seed was thrown away (dx = ...)
};

struct GradcheckReport {
  bool passed = true;
  std::string mode;  // "every element" or "3 random directions per input"
  double eps = 0, atol = 0, rtol = 0;  // the options it ran with
  std::vector<InputReport> inputs;  // one per input that requires grad
  std::vector<NodeReport> nodes;    // per-node mode, when it ran: every op of fn, in forward order
  // The accumulation check of every op fn records (options.check_accumulation):
  // how many were run again on their own, how many could not be (no replay),
  // and those that do not add into their inputs' slots.
  int accumulation_checked = 0, accumulation_unchecked = 0;
  std::vector<AccumulationFault> accumulation_faults;
  double max_abs_error() const;
  double max_rel_error() const;
  // The first op in forward order that disagrees; null when none does (or per-node mode did not run).
  const NodeReport* first_wrong_node() const;
  // "additive_attention_step: dL/dkeys wrong at [0, 2, 1] (analytic 0.12, numeric 0.31)"; without a
  // wrong node, the first accumulation fault ("my_softmax: dL/dx is assigned, not added ..."); or "".
  std::string first_wrong_node_summary() const;
  // The whole report: options, each input (its failing elements as a table),
  // hints, and the per-node results.
  std::string str() const;
};

using MultiOutputFn = std::function<Tensors(const Tensors&)>;
using SingleOutputFn = std::function<Tensor(const Tensors&)>;

GradcheckReport gradcheck(const MultiOutputFn& fn, const Tensors& inputs, const GradcheckOptions& options = {});
GradcheckReport gradcheck(const SingleOutputFn& fn, const Tensors& inputs, const GradcheckOptions& options = {});

// Per-node mode on its own: runs fn once, then checks every op it recorded on
// its own, whether or not the whole passes. report.inputs stays empty.
GradcheckReport gradcheck_nodes(const MultiOutputFn& fn, const Tensors& inputs, const GradcheckOptions& options = {});
GradcheckReport gradcheck_nodes(const SingleOutputFn& fn, const Tensors& inputs,
                                const GradcheckOptions& options = {});

namespace gradcheck_detail {
GradcheckReport empty_report(const GradcheckOptions& options);
// The element-by-element or directional comparison, without per-node mode
// (autograd/gradcheck/gradcheck.cpp); gradcheck_nodes.cpp runs it for each node.
GradcheckReport compare(const MultiOutputFn& fn, const Tensors& inputs, const GradcheckOptions& options);
void check_nodes(const MultiOutputFn& fn, const Tensors& inputs, const GradcheckOptions& options,
                 GradcheckReport& report);
// The accumulation check of every op fn records (gradcheck_nodes.cpp).
void check_accumulation(const MultiOutputFn& fn, const Tensors& inputs, const GradcheckOptions& options,
                        GradcheckReport& report);
}  // namespace gradcheck_detail

}  // namespace attend
