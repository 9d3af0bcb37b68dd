#pragma once
// The grader's parts: an exercise is one or more gradcheck checks of a custom
// op whose backward is the learner's function, run through run_answer, which
// finds out what the answer did with its gradient slots (added, assigned,
// nothing, or a shape mistake, with the gradient it was writing).
#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "autograd/autograd.hpp"

namespace attend::exercises::grader {

// What the learner's answer did in the first run since `yours` was cleared
// (run_answer): gradcheck's own backward.
struct Attempt {
  std::vector<std::string> names;  // the gradients, by input: "q", "W_k"
  Tensors yours;                   // the answer's own values, from a run on zero-filled slots
  std::vector<bool> assigned;      // the slot's earlier content did not survive: = for +=
  std::string error;               // what it threw, naming the gradient it was writing
};

// Runs `answer` on `slots` (an op's g.dx(i), in input order) twice: first on
// zero-filled copies, which gives the answer's own values, then on the slots
// themselves, which hold gradient already (gradcheck seeds them); what the
// slots gained must equal the first run, or the answer assigned.
using Answer = std::function<void(Tensors& slots)>;
void run_answer(Attempt& attempt, const std::vector<Tensor*>& slots, const Answer& answer);

// One gradcheck of an exercise: the function and its inputs (every one checked).
struct Check {
  std::string label;  // "" or which part: " (Op::Div)"
  MultiOutputFn fn;
  Tensors args;
  std::shared_ptr<Attempt> attempt;
};

// What a check outside gradcheck found: empty `what` when all is well.
struct Verdict {
  std::string what;        // what is wrong, or on success a note ("max |Δ| against ...")
  bool ok = true;
  bool give_hint = true;   // false when nothing was written at all
};

struct Exercise {
  const char* name;
  // Staged: the idea, the shape of the formula, the formula.
  std::array<const char*, 3> hints;
  std::vector<Check> checks;
  std::function<Verdict()> before;  // optional: checked first (exercise 2's order)
  std::function<Verdict()> after;   // optional: checked once gradcheck passes (against an oracle)
};

// The nine exercises, their inputs drawn from `seed` (catalogue.cpp), of which
// exercise 2 comes from catalogue_graph.cpp and 3 to 9 from catalogue_tensor.cpp.
std::vector<Exercise> catalogue(std::uint64_t seed);
std::vector<Exercise> graph_exercises(Generator& gen);
std::vector<Exercise> tensor_exercises(Generator& gen);

// A float64 leaf of `shape`, N(0, stddev²), requiring grad.
Tensor draw(Generator& gen, const Shape& shape, double stddev = 1.0);

// The largest |a - b| over two tensors of the same shape.
double max_diff(const Tensor& a, const Tensor& b);

}  // namespace attend::exercises::grader
