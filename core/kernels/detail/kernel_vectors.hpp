#pragma once
// The vectors the packed kernels are written in (GCC's vector extension), and
// the loads that core/kernels/detail/packed_kernel.hpp and
// core/kernels/detail/summary_kernel.hpp share. Included by packed_kernel.hpp.
#include <cstdint>
#include <cstring>

#include "core/kernels/packed_gemm.hpp"

// The wide kernels (AVX2, AVX-512) are built with GCC on x86-64 only: clang, in
// the fuzz preset, builds the baseline alone, as with ATTEND_SIMD_CLONES.
#if defined(__x86_64__) && !defined(__clang__)
#define ATTEND_PACKED_WIDE 1
#endif

namespace attend::blas::kernels {

// In each including file its own copies, as the templates that use them.
namespace {

// GCC's vector extension: V16 is one AVX-512 register of floats, V8 one AVX2
// register, V4 one SSE register. Each kernel below uses the width its target
// has natively (a vector wider than the target's registers is lowered through
// memory, many times slower). A panel row of 16 floats is kSplit<V> vectors.
using V16 = float __attribute__((vector_size(64)));
using V8 = float __attribute__((vector_size(32)));
using V4 = float __attribute__((vector_size(16)));
using I16 = std::int32_t __attribute__((vector_size(64)));
using I8 = std::int32_t __attribute__((vector_size(32)));
using I4 = std::int32_t __attribute__((vector_size(16)));
template <class V>
struct IntOf;  // the int32 vector of V's width, for fast_math::exp_lanes
template <>
struct IntOf<V16> { using type = I16; };
template <>
struct IntOf<V8> { using type = I8; };
template <>
struct IntOf<V4> { using type = I4; };
template <class V>
constexpr int kLanes = static_cast<int>(sizeof(V) / sizeof(float));
template <class V>
constexpr int kSplit = static_cast<int>(PackedMatrix::kPanel) / kLanes<V>;

// Through a reference, not a return value: a function returning a vector has
// a different ABI with and without the wider registers.
template <class V>
[[gnu::always_inline]] inline void load(V& v, const float* p) {
  std::memcpy(&v, p, sizeof v);
}

}  // namespace

}  // namespace attend::blas::kernels
