// run_answer: what an answer did with its gradient slots (grader.hpp).
#include "tests/exercises/grader.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/detail/add_shape_error.hpp"

namespace attend::exercises::grader {

namespace {

// add_ (or +=) threw because the shapes differ: name the slot by the tensor that
// was being added into, not by its shape (dh_prev and dc_prev share theirs).
std::string name_the_mistake(const detail::AddShapeError& e, const std::vector<std::string>& names, const Tensors& slots) {
  const Tensor& into = e.into();
  for (std::size_t i = 0; i < slots.size(); ++i)
    if (into.defined() && into.impl()->storage == slots[i].impl()->storage)  // the slot, or a view of it
      return fmt::format("a shape mistake while adding into dL/d{} {}: {}", names[i], slots[i].shape(), e.what());
  return fmt::format("your backward threw, adding into a tensor that is no gradient slot: {}", e.what());
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
  } catch (const detail::AddShapeError& e) {
    attempt.error = name_the_mistake(e, attempt.names, mine);
    throw;
  } catch (const Error& e) {
    attempt.error = fmt::format("your backward threw, before adding into a gradient: {}", e.what());
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
