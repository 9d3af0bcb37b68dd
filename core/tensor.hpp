#pragma once
// Tensor: a contiguous, row-major N-d array (rank 0 to kMaxRank) of float32 or
// float64, and the handle through which autograd sees it.
//
// A Tensor is a cheap handle (a shared pointer): copies share the same data,
// like PyTorch tensors. clone() copies the data.
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/dtype.hpp"
#include "core/error.hpp"
#include "core/shape.hpp"
#include "core/storage.hpp"

namespace attend {

class Node;  // autograd/node.hpp: the op that produced a tensor
class Generator;
struct TensorImpl;

class Tensor {
 public:
  Tensor() = default;  // undefined: holds nothing
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  bool defined() const { return impl_ != nullptr; }
  const Shape& shape() const;
  int dim() const { return shape().rank(); }
  std::int64_t size(int axis) const;  // negative axes count from the end
  std::int64_t numel() const { return shape().numel(); }
  DType dtype() const;

  // Typed access to the elements; T must match the dtype.
  template <class T>
  T* data();
  template <class T>
  const T* data() const;
  void* raw_data();
  const void* raw_data() const;

  // Checked element access by multi-index, for tests and tools (slow).
  double at(std::initializer_list<std::int64_t> index) const;
  void set(std::initializer_list<std::int64_t> index, double value);
  double item() const;  // the single element of a one-element tensor
  std::vector<double> to_vector() const;

  Tensor clone() const;       // a copy of the data, outside any graph
  Tensor to(DType dtype) const;  // converted copy (the same tensor if dtype matches)
  Tensor detach() const;      // shares the data, cut off from the graph

  // In-place updates, never recorded by autograd (for optimizers and tools).
  Tensor& fill_(double value);
  Tensor& zero_() { return fill_(0.0); }
  Tensor& copy_(const Tensor& src);               // same shape and dtype
  Tensor& add_(const Tensor& other, double alpha = 1.0);  // this += alpha * other
  // dx += dy: how a backward accumulates into its gradient slot, written as the
  // formulas in the comments are (add_ with alpha 1).
  Tensor& operator+=(const Tensor& other) { return add_(other); }
  Tensor& mul_(double factor);

  // Autograd. backward() is implemented in autograd/engine.cpp.
  bool requires_grad() const;
  Tensor& requires_grad_(bool on = true);  // only on leaves
  bool is_leaf() const;
  Tensor grad() const;  // accumulated gradient of a leaf; undefined until a backward reaches it
  void zero_grad();     // drops the accumulated gradient
  void set_grad(const Tensor& grad);
  void backward(const Tensor& grad = Tensor(), bool retain_graph = false) const;

  std::string str() const;  // PyTorch-like text, eliding the middle of large tensors

  const std::shared_ptr<TensorImpl>& impl() const { return impl_; }
  bool same(const Tensor& other) const { return impl_ == other.impl_; }

 private:
  const TensorImpl& checked() const;
  TensorImpl& checked();
  std::shared_ptr<TensorImpl> impl_;
};

// What a Tensor handle points at. Public so that autograd can link tensors to
// the graph; user code goes through Tensor.
struct TensorImpl {
  Shape shape;
  DType dtype = DType::Float32;
  std::shared_ptr<Storage> storage;  // numel * dtype_size bytes, contiguous
  // autograd
  bool requires_grad = false;
  Tensor grad;                    // accumulated gradient of a leaf
  std::shared_ptr<Node> grad_fn;  // the op that produced this tensor (null for leaves)
  int output_nr = 0;              // which output of grad_fn this tensor is
};

// Integer indices with a shape: token ids, targets, gather indices.
struct Indices {
  Indices() = default;
  Indices(std::vector<std::int64_t> values);  // 1-D
  Indices(std::vector<std::int64_t> values, Shape shape);
  Indices(std::initializer_list<std::int64_t> values) : Indices(std::vector<std::int64_t>(values)) {}
  std::int64_t numel() const { return static_cast<std::int64_t>(values.size()); }
  std::vector<std::int64_t> values;
  Shape shape;
};

// Factories. dtype defaults to float32, the training type.
Tensor empty(const Shape& shape, DType dtype = Float32);  // uninitialised
Tensor zeros(const Shape& shape, DType dtype = Float32);
Tensor ones(const Shape& shape, DType dtype = Float32);
Tensor full(const Shape& shape, double value, DType dtype = Float32);
Tensor zeros_like(const Tensor& t);
Tensor empty_like(const Tensor& t);
Tensor scalar(double value, DType dtype = Float32);  // rank 0
// tensor({1, 2, 3, 4}, {2, 2}): values in row-major order; the count must match.
Tensor tensor(std::span<const double> values, const Shape& shape, DType dtype = Float32);
Tensor tensor(std::initializer_list<double> values, const Shape& shape, DType dtype = Float32);
Tensor tensor(std::initializer_list<double> values, DType dtype = Float32);  // 1-D
Tensor arange(std::int64_t n, DType dtype = Float32);  // 0, 1, ..., n-1
Tensor uniform(const Shape& shape, double lo, double hi, Generator& gen, DType dtype = Float32);
Tensor normal(const Shape& shape, double mean, double stddev, Generator& gen, DType dtype = Float32);

// Throws "op: expected float64, got float32 for argument 'b'" style errors.
void check_same_dtype(const char* op, const Tensor& a, const Tensor& b);
void check_defined(const char* op, const Tensor& t, const char* what = "input");

// Exact element-wise equality of shape, dtype and values (for tests).
bool equal(const Tensor& a, const Tensor& b);
// |a - b| <= atol + rtol * |b| everywhere, shapes equal (for tests).
bool allclose(const Tensor& a, const Tensor& b, double rtol = 1e-5, double atol = 1e-8);
// max |a - b|
double max_abs_diff(const Tensor& a, const Tensor& b);

template <class T>
T* Tensor::data() {
  TensorImpl& impl = checked();
  if (impl.dtype != dtype_of<T>())
    fail("Tensor::data: asked for {} but the tensor is {}", dtype_of<T>(), impl.dtype);
  return impl.storage ? static_cast<T*>(impl.storage->data()) : nullptr;
}

template <class T>
const T* Tensor::data() const {
  const TensorImpl& impl = checked();
  if (impl.dtype != dtype_of<T>())
    fail("Tensor::data: asked for {} but the tensor is {}", dtype_of<T>(), impl.dtype);
  return impl.storage ? static_cast<const T*>(impl.storage->data()) : nullptr;
}

}  // namespace attend

template <>
struct fmt::formatter<attend::Tensor> : fmt::formatter<std::string_view> {
  auto format(const attend::Tensor& t, fmt::format_context& ctx) const {
    return fmt::formatter<std::string_view>::format(t.str(), ctx);
  }
};
