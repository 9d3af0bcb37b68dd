#pragma once
// Shape: the sizes of a tensor's axes, kept inline (no heap allocation), since
// every op creates one and small models run millions of ops.
#include <array>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>

#include <fmt/format.h>

namespace attend {

inline constexpr int kMaxRank = 6;

class Shape {
 public:
  Shape() = default;
  Shape(std::initializer_list<std::int64_t> dims);
  explicit Shape(std::span<const std::int64_t> dims);

  int rank() const { return rank_; }
  std::int64_t operator[](int axis) const { return dims_[axis]; }
  std::int64_t& operator[](int axis) { return dims_[axis]; }
  // The number of elements: 0 when any dimension is 0 (the others may then
  // multiply past int64: [0, 2^62, 2^62] is a valid empty shape), else their
  // product, which push_back keeps within int64 (Error otherwise).
  std::int64_t numel() const;
  // The product of dimensions [begin, end): an op's outer or inner extent
  // around an axis. It can overflow only in an empty shape, which has no
  // element to loop over; it is then 0.
  std::int64_t count(int begin, int end) const;
  const std::int64_t* begin() const { return dims_.data(); }
  const std::int64_t* end() const { return dims_.data() + rank_; }
  std::int64_t back() const { return dims_[rank_ - 1]; }

  void push_back(std::int64_t dim);
  Shape with(int axis, std::int64_t dim) const;  // a copy with one axis resized
  Shape without(int axis) const;                 // a copy with one axis removed
  Shape inserted(int axis, std::int64_t dim) const;

  bool operator==(const Shape& other) const;
  std::string str() const;  // "[3, 4]"

 private:
  std::array<std::int64_t, kMaxRank> dims_{};
  int rank_ = 0;
};

// Maps a possibly negative axis into [0, rank) or throws, naming the op:
// "softmax: axis 2 is out of range for a tensor of shape [3, 4]".
int normalize_axis(const char* op, int axis, const Shape& shape);

// Row-major strides, in elements (of an empty shape, 0 where they would overflow).
std::array<std::int64_t, kMaxRank> strides_of(const Shape& shape);

}  // namespace attend

template <>
struct fmt::formatter<attend::Shape> : fmt::formatter<std::string_view> {
  auto format(const attend::Shape& s, fmt::format_context& ctx) const {
    return fmt::formatter<std::string_view>::format(s.str(), ctx);
  }
};
