#pragma once
// What Tensor::add_ (and +=) throws when the shapes differ: an attend::Error,
// as every mistake is, that also holds the tensor being added into, so that a
// caller with several gradient buffers of one shape can tell which one it was
// (the exercises' grader names the gradient a learner was writing).
#include <string>
#include <utility>

#include "core/tensor.hpp"

namespace attend::detail {

class AddShapeError : public Error {
 public:
  AddShapeError(const std::string& what, Tensor into) : Error(what), into_(std::move(into)) {}
  const Tensor& into() const { return into_; }

 private:
  Tensor into_;
};

}  // namespace attend::detail
