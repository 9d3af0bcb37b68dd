#include "core/shape.hpp"

#include "core/error.hpp"

namespace attend {

Shape::Shape(std::initializer_list<std::int64_t> dims)
    : Shape(std::span<const std::int64_t>(dims.begin(), dims.size())) {}

Shape::Shape(std::span<const std::int64_t> dims) {
  if (dims.size() > static_cast<std::size_t>(kMaxRank))
    fail("Shape: rank {} is larger than the maximum rank {}", dims.size(), kMaxRank);
  for (std::int64_t d : dims) push_back(d);
}

namespace {

// The product of the non-zero dimensions, or -1 when it overflows int64. A zero
// dimension does not excuse the others: [2^62, 2^62, 0] is refused, since
// reshaping it or dropping the empty axis would overflow.
std::int64_t checked_product(const std::int64_t* dims, int rank) {
  std::int64_t n = 1;
  for (int i = 0; i < rank; ++i)
    if (dims[i] != 0 && __builtin_mul_overflow(n, dims[i], &n)) return -1;
  return n;
}

}  // namespace

void Shape::push_back(std::int64_t dim) {
  if (rank_ == kMaxRank) fail("Shape: cannot add an axis to {}: the maximum rank is {}", str(), kMaxRank);
  if (dim < 0) fail("Shape: negative dimension {} in {}", dim, str());
  dims_[rank_++] = dim;
  if (checked_product(dims_.data(), rank_) < 0) {
    --rank_;
    fail("Shape: {} with a dimension {} added has more elements than fit in 64 bits", str(), dim);
  }
}

std::int64_t Shape::numel() const {
  // Checked again here (one pass): operator[] can change a dimension after construction.
  std::int64_t n = 1;
  bool empty = false;
  for (int i = 0; i < rank_; ++i) {
    if (dims_[i] == 0) empty = true;
    else if (__builtin_mul_overflow(n, dims_[i], &n)) fail("Shape: {} has more elements than fit in 64 bits", str());
  }
  return empty ? 0 : n;
}

Shape Shape::with(int axis, std::int64_t dim) const {
  Shape s;
  for (int i = 0; i < rank_; ++i) s.push_back(i == axis ? dim : dims_[i]);
  return s;
}

Shape Shape::without(int axis) const {
  Shape s;
  for (int i = 0; i < rank_; ++i)
    if (i != axis) s.push_back(dims_[i]);
  return s;
}

Shape Shape::inserted(int axis, std::int64_t dim) const {
  Shape s;
  for (int i = 0; i <= rank_; ++i) {
    if (i == axis) s.push_back(dim);
    if (i < rank_) s.push_back(dims_[i]);
  }
  return s;
}

bool Shape::operator==(const Shape& other) const {
  if (rank_ != other.rank_) return false;
  for (int i = 0; i < rank_; ++i)
    if (dims_[i] != other.dims_[i]) return false;
  return true;
}

std::string Shape::str() const { return fmt::format("[{}]", fmt::join(begin(), end(), ", ")); }

int normalize_axis(const char* op, int axis, const Shape& shape) {
  int rank = shape.rank();
  if (axis < -rank || axis >= rank)
    fail("{}: axis {} is out of range for a tensor of shape {}", op, axis, shape);
  return axis < 0 ? axis + rank : axis;
}

std::array<std::int64_t, kMaxRank> strides_of(const Shape& shape) {
  std::array<std::int64_t, kMaxRank> strides{};
  std::int64_t stride = 1;
  for (int i = shape.rank() - 1; i >= 0; --i) {
    strides[i] = stride;
    stride *= shape[i];
  }
  return strides;
}

}  // namespace attend
