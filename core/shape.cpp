#include "core/shape.hpp"

#include <algorithm>

#include "core/error.hpp"

namespace attend {

Shape::Shape(std::initializer_list<std::int64_t> dims)
    : Shape(std::span<const std::int64_t>(dims.begin(), dims.size())) {}

Shape::Shape(std::span<const std::int64_t> dims) {
  if (dims.size() > static_cast<std::size_t>(kMaxRank))
    fail("Shape: rank {} is larger than the maximum rank {}", dims.size(), kMaxRank);
  // A zero anywhere makes the shape empty: [2^62, 2^62, 0] is not refused on its way to the 0.
  if (std::find(dims.begin(), dims.end(), 0) == dims.end()) {
    for (std::int64_t d : dims) push_back(d);  // refuses the first dimension that overflows, naming it
    return;
  }
  for (std::int64_t d : dims) {
    if (d < 0) fail("Shape: negative dimension {} in {}", d, str());
    dims_[rank_++] = d;
  }
}

namespace {

// The number of elements: 0 when any dimension is 0, whatever the others are
// (checked first, so [0, 2^62, 2^62] is an empty tensor, not an overflow), else
// the product of the dimensions, or -1 when it overflows int64.
std::int64_t checked_count(const std::int64_t* dims, int rank) {
  for (int i = 0; i < rank; ++i)
    if (dims[i] == 0) return 0;
  std::int64_t n = 1;
  for (int i = 0; i < rank; ++i)
    if (__builtin_mul_overflow(n, dims[i], &n)) return -1;
  return n;
}

}  // namespace

void Shape::push_back(std::int64_t dim) {
  if (rank_ == kMaxRank) fail("Shape: cannot add an axis to {}: the maximum rank is {}", str(), kMaxRank);
  if (dim < 0) fail("Shape: negative dimension {} in {}", dim, str());
  dims_[rank_++] = dim;
  if (checked_count(dims_.data(), rank_) < 0) {
    --rank_;
    fail("Shape: {} with a dimension {} added has more elements than fit in 64 bits", str(), dim);
  }
}

std::int64_t Shape::numel() const {
  // Checked again here: operator[] can change a dimension after construction.
  const std::int64_t n = checked_count(dims_.data(), rank_);
  if (n < 0) fail("Shape: {} has more elements than fit in 64 bits", str());
  return n;
}

std::int64_t Shape::count(int begin, int end) const {
  std::int64_t n = 1;
  for (int i = begin; i < end; ++i)
    if (__builtin_mul_overflow(n, dims_[i], &n)) return 0;  // only an empty shape gets here (see shape.hpp)
  return n;
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
  for (int i = shape.rank() - 1; i >= 0; --i) strides[i] = shape.count(i + 1, shape.rank());
  return strides;
}

}  // namespace attend
