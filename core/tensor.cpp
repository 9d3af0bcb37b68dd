#include "core/tensor.hpp"

#include <cmath>
#include <cstring>

#include "core/detail/add_shape_error.hpp"
#include "core/random.hpp"
#include "core/small_objects.hpp"

namespace attend {

// ---- handle and queries ----------------------------------------------------

const TensorImpl& Tensor::checked() const {
  if (!impl_) fail("Tensor: use of an undefined tensor");
  return *impl_;
}
TensorImpl& Tensor::checked() {
  if (!impl_) fail("Tensor: use of an undefined tensor");
  return *impl_;
}

const Shape& Tensor::shape() const { return checked().shape; }
DType Tensor::dtype() const { return checked().dtype; }

std::int64_t Tensor::size(int axis) const { return shape()[normalize_axis("Tensor::size", axis, shape())]; }

void* Tensor::raw_data() {
  TensorImpl& impl = checked();
  return impl.storage ? impl.storage->data() : nullptr;
}
const void* Tensor::raw_data() const {
  const TensorImpl& impl = checked();
  return impl.storage ? impl.storage->data() : nullptr;
}

namespace {
std::int64_t flat_index(const Shape& shape, std::initializer_list<std::int64_t> index) {
  if (static_cast<int>(index.size()) != shape.rank())
    fail("Tensor::at: {} indices given for a tensor of shape {}", index.size(), shape);
  std::int64_t flat = 0;
  int axis = 0;
  for (std::int64_t i : index) {
    if (i < 0 || i >= shape[axis])
      fail("Tensor::at: index {} is out of range for axis {} of size {} (shape {})", i, axis, shape[axis], shape);
    flat = flat * shape[axis] + i;
    ++axis;
  }
  return flat;
}

double read(const Tensor& t, std::int64_t i) {
  return t.dtype() == Float32 ? static_cast<double>(t.data<float>()[i]) : t.data<double>()[i];
}
}  // namespace

double Tensor::at(std::initializer_list<std::int64_t> index) const { return read(*this, flat_index(shape(), index)); }

void Tensor::set(std::initializer_list<std::int64_t> index, double value) {
  std::int64_t i = flat_index(shape(), index);
  dispatch(dtype(), [&](auto zero) { data<decltype(zero)>()[i] = static_cast<decltype(zero)>(value); });
}

double Tensor::item() const {
  if (numel() != 1) fail("Tensor::item: the tensor has {} elements (shape {}), not 1", numel(), shape());
  return read(*this, 0);
}

std::vector<double> Tensor::to_vector() const {
  std::vector<double> out(static_cast<std::size_t>(numel()));
  for (std::int64_t i = 0; i < numel(); ++i) out[i] = read(*this, i);
  return out;
}

Tensor Tensor::clone() const {
  Tensor out = empty(shape(), dtype());
  if (numel() > 0) std::memcpy(out.raw_data(), raw_data(), numel() * dtype_size(dtype()));
  return out;
}

Tensor Tensor::to(DType target) const {
  if (target == dtype()) return *this;
  Tensor out = empty(shape(), target);
  std::int64_t n = numel();
  if (target == Float64) {
    const float* src = data<float>();
    double* dst = out.data<double>();
    for (std::int64_t i = 0; i < n; ++i) dst[i] = src[i];
  } else {
    const double* src = data<double>();
    float* dst = out.data<float>();
    for (std::int64_t i = 0; i < n; ++i) dst[i] = static_cast<float>(src[i]);
  }
  return out;
}

Tensor Tensor::detach() const {
  auto impl = small_objects::make_shared<TensorImpl>();
  impl->shape = shape();
  impl->dtype = dtype();
  impl->storage = checked().storage;
  return Tensor(std::move(impl));
}

// ---- in-place updates ------------------------------------------------------

Tensor& Tensor::fill_(double value) {
  dispatch(dtype(), [&](auto zero) {
    using T = decltype(zero);
    T* p = data<T>();
    for (std::int64_t i = 0, n = numel(); i < n; ++i) p[i] = static_cast<T>(value);
  });
  return *this;
}

Tensor& Tensor::copy_(const Tensor& src) {
  check_same_dtype("copy_", *this, src);
  if (!(src.shape() == shape())) fail("copy_: shapes differ: {} <- {}", shape(), src.shape());
  if (numel() > 0 && raw_data() != src.raw_data())
    std::memcpy(raw_data(), src.raw_data(), numel() * dtype_size(dtype()));
  return *this;
}

Tensor& Tensor::add_(const Tensor& other, double alpha) {
  check_same_dtype("add_", *this, other);
  if (!(other.shape() == shape()))
    throw detail::AddShapeError(fmt::format("add_: shapes differ: {} += {}", shape(), other.shape()), *this);
  dispatch(dtype(), [&](auto zero) {
    using T = decltype(zero);
    T* p = data<T>();
    const T* q = other.data<T>();
    const T a = static_cast<T>(alpha);
    for (std::int64_t i = 0, n = numel(); i < n; ++i) p[i] += a * q[i];
  });
  return *this;
}

Tensor& Tensor::mul_(double factor) {
  dispatch(dtype(), [&](auto zero) {
    using T = decltype(zero);
    T* p = data<T>();
    const T f = static_cast<T>(factor);
    for (std::int64_t i = 0, n = numel(); i < n; ++i) p[i] *= f;
  });
  return *this;
}

// ---- autograd fields (the graph itself lives in autograd/) -----------------

bool Tensor::requires_grad() const { return impl_ && impl_->requires_grad; }

Tensor& Tensor::requires_grad_(bool on) {
  TensorImpl& impl = checked();
  if (impl.grad_fn && !on)
    fail("requires_grad_: this tensor was computed by an op; use detach() to cut it off the graph");
  impl.requires_grad = on;
  return *this;
}

bool Tensor::is_leaf() const { return checked().grad_fn == nullptr; }
Tensor Tensor::grad() const { return checked().grad; }
void Tensor::zero_grad() { checked().grad = Tensor(); }

void Tensor::set_grad(const Tensor& grad) {
  if (grad.defined()) {
    check_same_dtype("set_grad", *this, grad);
    if (!(grad.shape() == shape())) fail("set_grad: gradient shape {} differs from tensor shape {}", grad.shape(), shape());
  }
  checked().grad = grad;
}

// ---- factories -------------------------------------------------------------

Tensor empty(const Shape& shape, DType dtype) {
  auto impl = small_objects::make_shared<TensorImpl>();
  impl->shape = shape;
  impl->dtype = dtype;
  impl->storage = small_objects::make_shared<Storage>(static_cast<std::size_t>(shape.numel()) *
                                                     dtype_size(dtype));
  return Tensor(std::move(impl));
}

Tensor zeros(const Shape& shape, DType dtype) {
  Tensor t = empty(shape, dtype);
  if (t.numel() > 0) std::memset(t.raw_data(), 0, t.numel() * dtype_size(dtype));
  return t;
}

Tensor ones(const Shape& shape, DType dtype) { return full(shape, 1.0, dtype); }

Tensor full(const Shape& shape, double value, DType dtype) {
  Tensor t = empty(shape, dtype);
  t.fill_(value);
  return t;
}

Tensor zeros_like(const Tensor& t) { return zeros(t.shape(), t.dtype()); }
Tensor empty_like(const Tensor& t) { return empty(t.shape(), t.dtype()); }
Tensor scalar(double value, DType dtype) { return full(Shape{}, value, dtype); }

Tensor tensor(std::span<const double> values, const Shape& shape, DType dtype) {
  if (static_cast<std::int64_t>(values.size()) != shape.numel())
    fail("tensor: {} values given for shape {}, which holds {}", values.size(), shape, shape.numel());
  Tensor t = empty(shape, dtype);
  dispatch(dtype, [&](auto zero) {
    using T = decltype(zero);
    T* p = t.data<T>();
    for (std::size_t i = 0; i < values.size(); ++i) p[i] = static_cast<T>(values[i]);
  });
  return t;
}

Tensor tensor(std::initializer_list<double> values, const Shape& shape, DType dtype) {
  return tensor(std::span<const double>(values.begin(), values.size()), shape, dtype);
}

Tensor tensor(std::initializer_list<double> values, DType dtype) {
  return tensor(values, Shape{static_cast<std::int64_t>(values.size())}, dtype);
}

Tensor arange(std::int64_t n, DType dtype) {
  if (n < 0) fail("arange: n must not be negative, got {}", n);
  Tensor t = empty(Shape{n}, dtype);
  dispatch(dtype, [&](auto zero) {
    using T = decltype(zero);
    T* p = t.data<T>();
    for (std::int64_t i = 0; i < n; ++i) p[i] = static_cast<T>(i);
  });
  return t;
}

Tensor uniform(const Shape& shape, double lo, double hi, Generator& gen, DType dtype) {
  if (!(lo <= hi)) fail("uniform: lo {} must not exceed hi {}", lo, hi);
  Tensor t = empty(shape, dtype);
  dispatch(dtype, [&](auto zero) {
    using T = decltype(zero);
    T* p = t.data<T>();
    for (std::int64_t i = 0, n = t.numel(); i < n; ++i) p[i] = static_cast<T>(gen.uniform(lo, hi));
  });
  return t;
}

Tensor normal(const Shape& shape, double mean, double stddev, Generator& gen, DType dtype) {
  if (!(stddev >= 0)) fail("normal: stddev must not be negative, got {}", stddev);
  Tensor t = empty(shape, dtype);
  dispatch(dtype, [&](auto zero) {
    using T = decltype(zero);
    T* p = t.data<T>();
    for (std::int64_t i = 0, n = t.numel(); i < n; ++i) p[i] = static_cast<T>(gen.normal(mean, stddev));
  });
  return t;
}

Indices::Indices(std::vector<std::int64_t> v) : values(std::move(v)) {
  shape = Shape{static_cast<std::int64_t>(values.size())};
}

Indices::Indices(std::vector<std::int64_t> v, Shape s) : values(std::move(v)), shape(s) {
  if (shape.numel() != static_cast<std::int64_t>(values.size()))
    fail("Indices: {} values given for shape {}, which holds {}", values.size(), shape, shape.numel());
}

// ---- checks and comparisons --------------------------------------------------

void check_defined(const char* op, const Tensor& t, const char* what) {
  if (!t.defined()) fail("{}: {} is an undefined tensor", op, what);
}

void check_same_dtype(const char* op, const Tensor& a, const Tensor& b) {
  check_defined(op, a, "first input");
  check_defined(op, b, "second input");
  if (a.dtype() != b.dtype())
    fail("{}: dtypes differ: {} and {} (convert one with .to(dtype))", op, a.dtype(), b.dtype());
}

bool equal(const Tensor& a, const Tensor& b) {
  if (!(a.shape() == b.shape()) || a.dtype() != b.dtype()) return false;
  return a.numel() == 0 || std::memcmp(a.raw_data(), b.raw_data(), a.numel() * dtype_size(a.dtype())) == 0;
}

double max_abs_diff(const Tensor& a, const Tensor& b) {
  if (!(a.shape() == b.shape())) fail("max_abs_diff: shapes differ: {} and {}", a.shape(), b.shape());
  double worst = 0;
  for (std::int64_t i = 0; i < a.numel(); ++i) {
    double d = std::abs(read(a, i) - read(b, i));
    if (std::isnan(d)) return d;
    if (d > worst) worst = d;
  }
  return worst;
}

bool allclose(const Tensor& a, const Tensor& b, double rtol, double atol) {
  if (!(a.shape() == b.shape())) return false;
  for (std::int64_t i = 0; i < a.numel(); ++i) {
    double x = read(a, i), y = read(b, i);
    if (!(std::abs(x - y) <= atol + rtol * std::abs(y))) return false;
  }
  return true;
}

}  // namespace attend
