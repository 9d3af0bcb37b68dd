// run_answer: what an answer did with its gradient slots (grader.hpp).
#include "tests/exercises/grader.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace attend::exercises::grader {

namespace {

// "add_: shapes differ: (2, 4) += (2, 3, 4)" names the slot by its shape; when
// two slots share it (dh_prev, dc_prev), both are named.
std::string name_the_mistake(const std::string& message, const std::vector<std::string>& names,
                             const Tensors& slots) {
  std::vector<std::string> hits;
  Shape shape;
  for (std::size_t i = 0; i < slots.size(); ++i) {
    const std::string prefix = fmt::format("add_: shapes differ: {} += ", slots[i].shape());
    if (message.rfind(prefix, 0) == 0) {
      hits.push_back("dL/d" + names[i]);
      shape = slots[i].shape();
    }
  }
  if (hits.empty()) return fmt::format("your backward threw, before adding into a gradient: {}", message);
  return fmt::format("a shape mistake while adding into {} {}: {}", fmt::join(hits, " or "), shape, message);
}

}  // namespace

Tensor draw(Generator& gen, const Shape& shape, double stddev) {
  return normal(shape, 0.0, stddev, gen, Float64).requires_grad_();
}

double max_diff(const Tensor& a, const Tensor& b) {
  const std::vector<double> x = a.to_vector(), y = b.to_vector();
  double worst = 0;
  for (std::size_t i = 0; i < x.size(); ++i) worst = std::max(worst, std::abs(x[i] - y[i]));
  return worst;
}

void run_answer(Attempt& attempt, const std::vector<Tensor*>& slots, const Answer& answer) {
  attempt.error.clear();
  Tensors mine;
  for (const Tensor* slot : slots) mine.push_back(zeros_like(*slot));
  try {
    answer(mine);
  } catch (const Error& e) {
    attempt.error = name_the_mistake(e.what(), attempt.names, mine);
    throw;
  }
  for (std::size_t i = 0; i < slots.size(); ++i)
    if (!(mine[i].shape() == slots[i]->shape())) {
      attempt.error = fmt::format("dL/d{} is {}, and your backward put a {} tensor in its slot", attempt.names[i],
                                  slots[i]->shape(), mine[i].shape());
      fail("{}", attempt.error);
    }
  Tensors before, handles;
  for (const Tensor* slot : slots) {
    before.push_back(slot->clone());
    handles.push_back(*slot);  // shares the slot's data: what the answer adds lands in it
  }
  answer(handles);
  // gradcheck's own backward runs first; its accumulation check then replays the
  // op with other gradients, which must not replace what is reported.
  const bool first = attempt.yours.empty();
  if (first) {
    attempt.yours = mine;
    attempt.assigned.assign(slots.size(), false);
  }
  for (std::size_t i = 0; i < slots.size(); ++i) {
    if (!handles[i].same(*slots[i])) *slots[i] = handles[i];  // `dx = ...` rebound the handle: so be it
    if (!first) continue;
    const std::vector<double> now = slots[i]->to_vector(), was = before[i].to_vector(), own = mine[i].to_vector();
    for (std::size_t k = 0; k < now.size(); ++k)
      if (std::abs(now[k] - was[k] - own[k]) > 1e-9 * (1 + std::abs(was[k]) + std::abs(own[k]))) {
        attempt.assigned[i] = true;
        break;
      }
  }
}

}  // namespace attend::exercises::grader
