#pragma once
// The kernel of blas::summarise_rows (core/kernels/packed_gemm.hpp): the row summaries
// of y = x @ W^T + bias, with no y and no packed W. Included by
// core/kernels/packed_gemm*.cpp (and bench/kernel_shapes.cpp) after
// core/kernels/detail/packed_kernel.hpp, whose vector types and loads
// (core/kernels/detail/kernel_vectors.hpp), any_lane and exp2 it shares.
//
// The product runs turned around, y^T = W @ x^T: the kernel's rows are W's
// rows, read where they are (R of them, R columns of y, per block), and its
// panels are x's, packed (x has a few rows; W is the big operand: 8 MB at M
// decoding, which would otherwise be packed once per search). An
// accumulator then holds one column of y for the 16 rows of a panel, so lane j
// of every vector is row j of the panel: a row's summary is gathered lane-wise,
// with one state per panel for all R columns of a block, not one per row of y
// per block as the row-major epilogue needs (core/kernels/detail/packed_kernel.hpp).
// Letters: x (M, K), W (N, K), y (M, N); a block is R columns of y (rows of W)
// by P panels (16 P rows of y).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "core/kernels/packed_gemm.hpp"

namespace attend::blas::kernels {

// What a panel's 16 rows of y have seen of their columns so far, lane j for
// row j: as LaneSummary, but each lane a whole row, so the fold is per lane.
// A lane adds up every column of its row (8,000 at M): in float for up to
// kFlushBlocks blocks, then into double.
struct ColumnLanes {
  float max[PackedMatrix::kPanel];
  float ref[PackedMatrix::kPanel];
  float partial[PackedMatrix::kPanel];  // sum e^(z - r) since the last flush into exp_sum
  float best_value[PackedMatrix::kPanel];
  std::int32_t best[PackedMatrix::kPanel];
  double exp_sum[PackedMatrix::kPanel];
};

// The lanes before any column: what summarise_rows starts each panel from.
inline ColumnLanes empty_column_lanes() {
  ColumnLanes s;
  std::fill_n(s.max, PackedMatrix::kPanel, -std::numeric_limits<float>::infinity());
  // Not -inf, as for the row lanes (packed_gemm.cpp): e^(z - r) of a z of -inf is ~0, not NaN.
  std::fill_n(s.ref, PackedMatrix::kPanel, std::numeric_limits<float>::lowest());
  std::fill_n(s.partial, PackedMatrix::kPanel, 0.0f);
  std::fill_n(s.best_value, PackedMatrix::kPanel, -std::numeric_limits<float>::infinity());
  std::fill_n(s.best, PackedMatrix::kPanel, -1);
  std::fill_n(s.exp_sum, PackedMatrix::kPanel, 0.0);
  return s;
}

#if defined(ATTEND_PACKED_WIDE)
__attribute__((target("arch=x86-64-v4"))) void summarise_avx512(std::int64_t N, const float* w, std::int64_t ldw,
                                                                 const PackedMatrix& xp, const float* bias,
                                                                 std::int64_t skip, bool sums, ColumnLanes* lanes);
__attribute__((target("arch=x86-64-v3"))) void summarise_avx2(std::int64_t N, const float* w, std::int64_t ldw,
                                                               const PackedMatrix& xp, const float* bias,
                                                               std::int64_t skip, bool sums, ColumnLanes* lanes);
#endif
void summarise_baseline(std::int64_t N, const float* w, std::int64_t ldw, const PackedMatrix& xp, const float* bias,
                        std::int64_t skip, bool sums, ColumnLanes* lanes);

namespace {

// The sums' part of a block's fold, for one lane vector (lanes off .. off + L - 1
// of a panel) given the block's R vectors z and the lanes' new maximum m:
//   r' = m where m > r + 32, else r     (and then s = s e^(r - r'))
//   s' = s + sum of e^(z - r') over the R columns
template <class V, int R>
[[gnu::always_inline]] inline void add_exps(const V (&z)[R], const V& m, bool flush, ColumnLanes& st, int off) {
  using I = typename IntOf<V>::type;
  constexpr int L = kLanes<V>;
  constexpr float kLog2e = 1.44269504088896341f, kRefGap = 32.0f;
  V ref;
  load(ref, st.ref + off);
  const auto moves = m > ref + kRefGap;
  if (any_lane(moves)) {  // a row's first block, and seldom after it
    // s = (s + partial) e^(r - r'), in double: 0 from the first r (float's
    // lowest), and a NaN sum stays NaN
    for (int l = 0; l < L; ++l)
      if (m[l] > ref[l] + kRefGap) {
        double& s = st.exp_sum[off + l];
        s = (s + static_cast<double>(st.partial[off + l])) *
            std::exp(static_cast<double>(ref[l]) - static_cast<double>(m[l]));
        st.partial[off + l] = 0.0f;
      }
    ref = moves ? m : ref;
    std::memcpy(st.ref + off, &ref, sizeof ref);
  }
  V sum;
  load(sum, st.partial + off);
  for (int r = 0; r < R; ++r) {
    V e = (z[r] - ref) * kLog2e;
    fast_math::exp2_lanes<V, I>(e);
    sum += e;
  }
  std::memcpy(st.partial + off, &sum, sizeof sum);
  if (flush)
    for (int l = 0; l < L; ++l) {
      st.exp_sum[off + l] += static_cast<double>(st.partial[off + l]);
      st.partial[off + l] = 0.0f;
    }
}

// Columns n0 .. n0 + R - 1 of y for the panels p0 .. p0 + P - 1 of x, folded
// into their rows' lanes. w points at W's row n0. Per lane (a row of y), as
// summarise() in core/kernels/detail/packed_kernel.hpp does it per lane of a row:
//   m' = max(m, z over the R columns)     (NaN passed over)
//   r' = m' where m' > r + 32, else r     (and then s = s e^(r - r'))
//   s' = s + sum of e^(z - r') over the R columns
//   best: the column of z where z > the best so far, skip's column left out
// kSums false: the maximum and the best alone, no r, s or exponential (greedy
// decoding without scores; `attend bench` times greedy with and without them).
template <class V, int R, int P, bool kSums>
[[gnu::always_inline]] inline void column_block(const float* w, std::int64_t ldw, const PackedMatrix& xp,
                                                std::int64_t p0, std::int64_t n0, const float* bias,
                                                std::int64_t skip, bool flush, bool prefetch, ColumnLanes* lanes) {
  using I = typename IntOf<V>::type;
  constexpr int S = kSplit<V>, L = kLanes<V>, Q = P * S;
  const std::int64_t K = xp.k();
  V acc[R][Q];
  for (int r = 0; r < R; ++r)
    for (int q = 0; q < Q; ++q) acc[r][q] = V{};
  const float* panel[P];
  for (int p = 0; p < P; ++p) panel[p] = xp.panel(p0 + p);
  // W's rows of the next block into L2 while this one works, a cache line per
  // k from the first (W comes from L3 or memory at every step of decoding); the
  // caller asks only where that block is whole, so every line is within W
  const char* next = prefetch ? reinterpret_cast<const char*>(w + R * ldw) : nullptr;
  const std::int64_t next_lines = prefetch ? ((R - 1) * ldw + K) * static_cast<std::int64_t>(sizeof(float)) / 64 : 0;
#pragma GCC unroll 4
  for (std::int64_t k = 0; k < K; ++k) {
    for (std::int64_t line = k; line < next_lines; line += K) __builtin_prefetch(next + line * 64, 0, 2);
    V b[Q];
    for (int q = 0; q < Q; ++q) load(b[q], panel[q / S] + k * PackedMatrix::kPanel + (q % S) * L);
    for (int r = 0; r < R; ++r) {
      const float w_rk = w[r * ldw + k];
      for (int q = 0; q < Q; ++q) acc[r][q] += w_rk * b[q];  // y[i, n0 + r] += W[n0 + r, k] x[i, k], i in the panel
    }
  }
  const std::int64_t skip_r = skip - n0;  // in 0 .. R - 1 when skip's column is in this block
  for (int q = 0; q < Q; ++q) {
    ColumnLanes& st = lanes[p0 + q / S];
    const int off = (q % S) * L;
    V z[R];
    for (int r = 0; r < R; ++r) z[r] = bias == nullptr ? acc[r][q] : acc[r][q] + bias[n0 + r];
    V m;
    load(m, st.max + off);
    for (int r = 0; r < R; ++r) m = z[r] > m ? z[r] : m;
    if constexpr (kSums) add_exps<V, R>(z, m, flush, st, off);
    std::memcpy(st.max + off, &m, sizeof m);
    V best_value;
    I best;
    load(best_value, st.best_value + off);
    std::memcpy(&best, st.best + off, sizeof best);
    for (int r = 0; r < R; ++r) {  // columns in order: the first of equal values stays
      const V candidate = r == skip_r ? V{} - std::numeric_limits<float>::infinity() : z[r];
      const auto above = candidate > best_value;
      best_value = above ? candidate : best_value;
      best = above ? I{} + static_cast<std::int32_t>(n0 + r) : best;
    }
    std::memcpy(st.best_value + off, &best_value, sizeof best_value);
    std::memcpy(st.best + off, &best, sizeof best);
  }
}

// The same for rows = 1 .. R columns (the last of y).
template <class V, int R, int P, bool kSums>
[[gnu::always_inline]] inline void column_block_rows(std::int64_t rows, const float* w, std::int64_t ldw,
                                                     const PackedMatrix& xp, std::int64_t p0, std::int64_t n0,
                                                     const float* bias, std::int64_t skip, bool flush,
                                                     bool prefetch, ColumnLanes* lanes) {
  if constexpr (R > 1) {
    if (rows < R)
      return column_block_rows<V, R - 1, P, kSums>(rows, w, ldw, xp, p0, n0, bias, skip, flush, prefetch, lanes);
  }
  column_block<V, R, P, kSums>(w, ldw, xp, p0, n0, bias, skip, flush, prefetch, lanes);
}

// Float partial sums are flushed into the double sums every kFlushBlocks
// blocks (and at the last): at most R * 16 terms in float.
constexpr std::int64_t kFlushBlocks = 16;

// Panels p_begin .. p_end - 1, P at a time, over every column of y, R columns
// at a time: W's R rows stay in L1 while the panels, from L2, pass over them.
template <class V, int R, int P, bool kSums>
[[gnu::always_inline]] inline void columns(std::int64_t N, const float* w, std::int64_t ldw, const PackedMatrix& xp,
                                           std::int64_t p_begin, std::int64_t p_end, const float* bias,
                                           std::int64_t skip, ColumnLanes* lanes) {
  for (std::int64_t n0 = 0, block = 1; n0 < N; n0 += R, ++block) {
    const std::int64_t rows = std::min<std::int64_t>(R, N - n0);
    const bool flush = block % kFlushBlocks == 0 || n0 + R >= N;
    for (std::int64_t p0 = p_begin; p0 + P <= p_end; p0 += P)  // the next block's rows: by the first panels, if whole
      column_block_rows<V, R, P, kSums>(rows, w + n0 * ldw, ldw, xp, p0, n0, bias, skip, flush,
                                 p0 == p_begin && n0 + 2 * R <= N, lanes);
  }
}

// Every panel of x: P at a time with R columns per block, then those left one
// at a time with R1 columns per block (more columns for fewer panels, so that
// a block keeps as many accumulators busy).
template <class V, int R, int P, int R1, bool kSums>
[[gnu::always_inline]] inline void all_panels(std::int64_t N, const float* w, std::int64_t ldw, const PackedMatrix& xp,
                                              const float* bias, std::int64_t skip, ColumnLanes* lanes) {
  const std::int64_t panels = (xp.n() + PackedMatrix::kPanel - 1) / PackedMatrix::kPanel, grouped = panels / P * P;
  if (grouped > 0) columns<V, R, P, kSums>(N, w, ldw, xp, 0, grouped, bias, skip, lanes);
  if (grouped < panels) columns<V, R1, 1, kSums>(N, w, ldw, xp, grouped, panels, bias, skip, lanes);
}

// The same with the sums or (sums false) the maximum and best alone (kSums).
template <class V, int R, int P, int R1>
[[gnu::always_inline]] inline void run_summary(std::int64_t N, const float* w, std::int64_t ldw,
                                               const PackedMatrix& xp, const float* bias, std::int64_t skip,
                                               bool sums, ColumnLanes* lanes) {
  if (sums) return all_panels<V, R, P, R1, true>(N, w, ldw, xp, bias, skip, lanes);
  all_panels<V, R, P, R1, false>(N, w, ldw, xp, bias, skip, lanes);
}

}  // namespace

}  // namespace attend::blas::kernels
