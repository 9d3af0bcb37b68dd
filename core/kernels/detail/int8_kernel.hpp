#pragma once
// The int8 product's kernels (core/kernels/int8_gemm.hpp), included by
// core/kernels/int8_gemm*.cpp alone: each path's declaration, and what the
// paths share: the loop over blocks and the epilogue, which turns a block's
// int32 dots into y and the rows' summaries. A path supplies only the dots of
// a block (R rows x P panels), so all of them give the same y bit for bit.
// The files that include this are compiled without FMA contraction
// (core/CMakeLists.txt): the epilogue's a * b + c must round twice on every path.
// Letters as in packed_gemm.hpp; u (M, K4) is x quantized plus 128, rows K4 apart.
#include <algorithm>
#include <cstdint>
#include <limits>

#include "core/kernels/detail/int8_gemm_detail.hpp"
#include "core/kernels/detail/packed_kernel.hpp"

namespace attend::blas::kernels {

// One path per instruction set (the block shapes: core/kernels/int8_gemm.hpp).
// Declared before the templates: GCC declares a target's builtins (vpdpbusd,
// vpmaddwd) only once it has seen a function for that target.
#if defined(ATTEND_PACKED_WIDE)
__attribute__((target("arch=x86-64-v4,avx512vnni"))) void int8_vnni(std::int64_t M, const std::uint8_t* u,
                                                                    const float* s, const Int8Panels& w,
                                                                    std::int64_t N, float beta, float* y,
                                                                    std::int64_t ldy, const Lanes& epi);
__attribute__((target("arch=x86-64-v3"))) void int8_avx2(std::int64_t M, const std::uint8_t* u, const float* s,
                                                         const Int8Panels& w, std::int64_t N, float beta,
                                                         float* y, std::int64_t ldy, const Lanes& epi);
#endif
void int8_portable(std::int64_t M, const std::uint8_t* u, const float* s, const Int8Panels& w, std::int64_t N,
                   float beta, float* y, std::int64_t ldy, const Lanes& epi);

namespace {

// A block's dots: dot[r][16 p + j] = sum_k u[r, k] q[16 (p0 + p) + j, k] (the
// offset 128 rowsum not yet taken off).
template <int R, int P>
using Dots = std::int32_t[R][P * PackedMatrix::kPanel];

// y[0:R, 16 p0 : 16 (p0 + P)] from the block's dots, then the rows' summaries:
//   d = dot - 128 rowsum_n                       (int32, exact)
//   y = (s_i * scale_n) * float(d) + bias_n + beta * y
// the float kernel's epilogue (packed_kernel.hpp's block()) from there on,
// but the summaries taken panel by panel.
template <class V, int R, int P>
[[gnu::always_inline]] inline void finish(const Dots<R, P>& dot, const float* s, const Int8Panels& w,
                                          std::int64_t N, std::int64_t p0, float beta, float* y, std::int64_t ldy,
                                          const Lanes& epi) {
  using I = typename IntOf<V>::type;
  constexpr int S = kSplit<V>, L = kLanes<V>, Q = P * S;
  constexpr std::int64_t kPanel = PackedMatrix::kPanel;
  for (int r = 0; r < R; ++r) {
    V z[Q];
    for (int p = 0; p < P; ++p) {
      const std::int64_t col = (p0 + p) * kPanel, cols = std::min(kPanel, N - col);
      float* y_r = y + r * ldy + col;
      for (int h = 0; h < S; ++h) {
        I d, sums;
        std::memcpy(&d, dot[r] + p * kPanel + h * L, sizeof d);
        std::memcpy(&sums, w.row_sums.data() + col + h * L, sizeof sums);
        d -= sums * 128;
        V scale;
        load(scale, w.scales.data() + col + h * L);
        V v = (scale * s[r]) * __builtin_convertvector(d, V);
        if (cols == kPanel) {
          if (epi.bias != nullptr) {
            V b;
            load(b, epi.bias + col + h * L);
            v += b;
          }
          if (beta != 0.0f) {  // beta 0 never reads y (it may hold NaN)
            V y_old;
            load(y_old, y_r + h * L);
            v += beta * y_old;
          }
          if (epi.store_y) std::memcpy(y_r + h * L, &v, sizeof v);
        }
        z[p * S + h] = v;
      }
      if (cols < kPanel) {  // the last panel, past the end of y's row
        float out[kPanel];
        for (int h = 0; h < S; ++h) std::memcpy(out + h * L, &z[p * S + h], sizeof(V));
        for (std::int64_t j = 0; j < kPanel; ++j) {
          if (j >= cols) {
            out[j] = -std::numeric_limits<float>::infinity();  // for the summary only
            continue;
          }
          if (epi.bias != nullptr) out[j] += epi.bias[col + j];
          if (beta != 0.0f) out[j] += beta * y_r[j];
          if (epi.store_y) y_r[j] = out[j];
        }
        for (int h = 0; h < S; ++h) load(z[p * S + h], out + h * L);
      }
    }
    // Panel by panel, not the block at once: where a lane's sum rescales
    // depends on how many columns each call sees, and every path, whatever its
    // block, must give the same sums.
    if (epi.rows != nullptr)
      for (int p = 0; p < P; ++p) {
        V zp[S];
        for (int h = 0; h < S; ++h) zp[h] = z[p * S + h];
        summarise<V, S>(zp, (p0 + p) * kPanel, epi.skip, epi.rows[r]);
      }
  }
}

// rows = 1 .. R rows of x from u: Path::dots<R, P> then finish. U: u's
// element, uint8 or (a path that widens it once per product) int16.
template <class Path, class V, int R, int P, class U>
[[gnu::always_inline]] inline void int8_block(std::int64_t rows, const U* u, const float* s,
                                              const Int8Panels& w, std::int64_t N, std::int64_t p0,
                                              float beta, float* y, std::int64_t ldy, const Lanes& epi) {
  if constexpr (R > 1) {
    if (rows < R) return int8_block<Path, V, R - 1, P, U>(rows, u, s, w, N, p0, beta, y, ldy, epi);
  }
  alignas(64) Dots<R, P> dot;
  Path::template dots<R, P>(u, w, p0, dot);
  finish<V, R, P>(dot, s, w, N, p0, beta, y, ldy, epi);
}

// Panels P at a time (then one at a time), and for each, R rows at a time, as
// the float kernel's product(): a block's panels stay in L1 while the rows pass.
template <class Path, class V, int R, int P, class U>
[[gnu::always_inline]] inline void int8_run(std::int64_t M, const U* u, const float* s,
                                            const Int8Panels& w, std::int64_t N, float beta, float* y,
                                            std::int64_t ldy, const Lanes& epi) {
  const std::int64_t panels = (N + PackedMatrix::kPanel - 1) / PackedMatrix::kPanel;
  const auto epi_from = [&](std::int64_t i) {
    return Lanes{epi.bias, epi.rows == nullptr ? nullptr : epi.rows + i, epi.skip, epi.store_y};
  };
  std::int64_t p0 = 0;
  for (; p0 + P <= panels; p0 += P)
    for (std::int64_t i = 0; i < M; i += R)
      int8_block<Path, V, R, P, U>(std::min<std::int64_t>(R, M - i), u + i * w.k4, s + i, w, N, p0, beta, y + i * ldy,
                                ldy, epi_from(i));
  for (; p0 < panels; ++p0)
    for (std::int64_t i = 0; i < M; i += R)
      int8_block<Path, V, R, 1, U>(std::min<std::int64_t>(R, M - i), u + i * w.k4, s + i, w, N, p0, beta, y + i * ldy,
                                ldy, epi_from(i));
}

}  // namespace

}  // namespace attend::blas::kernels
