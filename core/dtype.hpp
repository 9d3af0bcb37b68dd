#pragma once
// The element types a Tensor can hold. float32 is the training default;
// float64 exists so that finite-difference gradient checks are meaningful.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/error.hpp"

namespace attend {

enum class DType : std::uint8_t { Float32, Float64 };

inline constexpr DType Float32 = DType::Float32;
inline constexpr DType Float64 = DType::Float64;

inline std::size_t dtype_size(DType dtype) { return dtype == DType::Float32 ? 4 : 8; }
inline std::string_view dtype_name(DType dtype) {
  return dtype == DType::Float32 ? "float32" : "float64";
}

template <class T>
constexpr DType dtype_of();
template <>
constexpr DType dtype_of<float>() { return DType::Float32; }
template <>
constexpr DType dtype_of<double>() { return DType::Float64; }

// Runs f with a value of the C++ type that matches dtype, so a kernel is written
// once for both:  dispatch(x.dtype(), [&](auto zero) { using T = decltype(zero); ... });
template <class F>
decltype(auto) dispatch(DType dtype, F&& f) {
  if (dtype == DType::Float32) return f(float{});
  return f(double{});
}

}  // namespace attend

template <>
struct fmt::formatter<attend::DType> : fmt::formatter<std::string_view> {
  auto format(attend::DType d, fmt::format_context& ctx) const {
    return fmt::formatter<std::string_view>::format(attend::dtype_name(d), ctx);
  }
};
