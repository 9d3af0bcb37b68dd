#pragma once
// The packed product's kernel, included by core/kernels/packed_gemm*.cpp alone (users
// include core/kernels/packed_gemm.hpp; bench/kernel_shapes.cpp instantiates the
// templates at other block shapes, to time them): the templates every
// instruction set's kernel is made from, and the kernels' declarations. Each
// kernel has a file of its own, compiled for its target, so that the build
// compiles them side by side.
// Letters as in packed_gemm.hpp: x (M, K), W (N, K), y (M, N); R rows of x and
// P panels (16 P columns of y) per block.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "core/kernels/detail/fast_math.hpp"
#include "core/kernels/detail/kernel_vectors.hpp"
#include "core/kernels/packed_gemm.hpp"

namespace attend::blas::kernels {

// A row's summary while the kernel runs, lane by lane: lane j of the 16 holds
// what it has seen of the columns 16 i + j, so that no block needs a horizontal
// reduction (a chain of 16 dependent steps per row). fold() reduces the lanes
// once, after the product.
struct LaneSummary {
  float max[PackedMatrix::kPanel];         // m_j, NaN passed over
  float ref[PackedMatrix::kPanel];         // r_j <= m_j, what the sum is relative to
  float exp_sum[PackedMatrix::kPanel];     // s_j = sum e^(z - r_j)
  float best_value[PackedMatrix::kPanel];  // the largest z but skip's
  std::int32_t best[PackedMatrix::kPanel];  // its column, the first on a tie
};

// The epilogue as the kernel runs it: the rows' lanes instead of their summaries.
struct Lanes {
  const float* bias = nullptr;
  LaneSummary* rows = nullptr;
  std::int64_t skip = -1;
  bool store_y = true;  // false: the summaries alone (Epilogue::store_y)
};

// A row's lanes before any column, and the lanes folded into its summary after
// the product (core/kernels/packed_gemm.cpp; the int8 product folds them too).
LaneSummary empty_lanes();
RowSummary fold(const LaneSummary& lanes);

// One kernel per instruction set, each compiled for its own (clang, in the fuzz
// preset, builds the baseline alone, as with ATTEND_SIMD_CLONES):
//   AVX-512   6 rows x 4 panels: 24 of its 32 registers accumulate, fed by 4
//             loads and 6 broadcasts per k, 10 loads per 24 multiply-adds (8 rows
//             x 2 panels has 10 per 16); x as its transpose: 6 rows.
//             bench_kernel_shapes times it against 8 x 2 and 8 x 3 at the
//             shapes attend runs; docs/kernels.md says why 6 x 4
//   AVX2      6 rows x 1 panel: 12 of its 16 (4 rows, 8 registers, leave the
//             loads and broadcasts too few multiply-adds to hide them behind)
//   baseline  2 rows x 1 panel:  8 of SSE's 16
// Each takes x as rows or (xt) as its transpose; packed_gemm.cpp picks one.
#if defined(ATTEND_PACKED_WIDE)
__attribute__((target("arch=x86-64-v4"))) void run_avx512(bool xt, std::int64_t M, const float* x, std::int64_t ldx,
                                                           const PackedMatrix& w, float beta, float* y,
                                                           std::int64_t ldy, const Lanes& epi);
__attribute__((target("arch=x86-64-v3"))) void run_avx2(bool xt, std::int64_t M, const float* x, std::int64_t ldx,
                                                         const PackedMatrix& w, float beta, float* y,
                                                         std::int64_t ldy, const Lanes& epi);
#endif
void run_baseline(bool xt, std::int64_t M, const float* x, std::int64_t ldx, const PackedMatrix& w, float beta,
                  float* y, std::int64_t ldy, const Lanes& epi);

// The templates: in each including file its own copies, as when they were one file.
namespace {

// Where x[r, k] is: rows of x ldx apart, or (XT) x given as its transpose, x^T
// (K, M) with rows ldx apart, so that x[r, k] = x^T[k, r] (the R values a k
// needs then sit side by side).
template <bool XT>
[[gnu::always_inline]] inline float x_at(const float* x, std::int64_t ldx, int r, std::int64_t k) {
  return XT ? x[k * ldx + r] : x[r * ldx + k];
}

// Lines of the panels that come next, for a block to prefetch into L2 while it
// works: from `lines` on, `count` cache lines (see product()).
struct Prefetch {
  const char* lines = nullptr;
  std::int64_t count = 0;
};

// Whether any lane of a comparison's result is set. Here, after the kernels'
// declarations: GCC declares the AVX-512 builtin it calls only once it has seen
// a declaration for that target.
template <class I>
[[gnu::always_inline]] inline bool any_lane(const I& mask) {
#if defined(ATTEND_PACKED_WIDE)
  // AVX-512: one test into a mask register (the OR of the words below took ~20 instructions)
  if constexpr (sizeof(I) == 64) return __builtin_ia32_ptestmd512(mask, mask, static_cast<std::uint16_t>(0xFFFF)) != 0;
#endif
  std::uint64_t words[sizeof(I) / 8];
  std::memcpy(words, &mask, sizeof words);
  std::uint64_t any = 0;
  for (std::uint64_t w : words) any |= w;
  return any != 0;
}

// Folds the Q vectors z of one row's block, columns col0 .. col0 + Q L - 1 (past
// the end of the row: -inf), into the row's lanes; vector q adds to lane
// vector q % S (the columns 16 i + (q % S) L + l). Per lane:
//   m' = max(m, z)                        (NaN passed over: a compare that fails keeps m)
//   r' = m' where m' > r + 32, else r     (and then s = s e^(r - r'))
//   s' = s + e^(z - r')                   (by 2^((z - r') log2 e): exp2_lanes)
//   best: z's column where z > the best so far, skip's column left out
// The sum is relative to r, not to the running maximum: it moves only when the
// maximum passes it by 32 (e^(z - r) <= e^32 ~ 8e13 then, so that 2^31 such
// terms stay below float's range), which after the first blocks of a row it
// almost never does. With r = m the branch went the other way unpredictably
// (a lane's maximum moves at the n-th value with chance 1/n).
template <class V, int Q>
[[gnu::always_inline]] inline void summarise(const V (&z)[Q], std::int64_t col0, std::int64_t skip,
                                             LaneSummary& row) {
  using I = typename IntOf<V>::type;
  constexpr int L = kLanes<V>, S = kSplit<V>;
  constexpr float kLog2e = 1.44269504088896341f, kRefGap = 32.0f;
  I lane;
  for (int l = 0; l < L; ++l) lane[l] = l;
  const bool skip_here = skip >= col0 && skip < col0 + Q * L;
  for (int s = 0; s < S; ++s) {
    V m, ref, sum, best_value;
    I best;
    load(m, row.max + s * L);
    load(ref, row.ref + s * L);
    load(sum, row.exp_sum + s * L);
    load(best_value, row.best_value + s * L);
    std::memcpy(&best, row.best + s * L, sizeof best);
    for (int q = s; q < Q; q += S) m = z[q] > m ? z[q] : m;
    const auto moves = m > ref + kRefGap;
    if (any_lane(moves)) {  // the row's first block, and seldom after it
      V scale = (ref - m) * kLog2e;  // e^(r - m): 2^-125 from the first r, lowest float
      fast_math::exp2_lanes<V, I>(scale);
      sum = moves ? sum * scale : sum;  // NaN stays NaN
      ref = moves ? m : ref;
    }
    for (int q = s; q < Q; q += S) {
      V e = (z[q] - ref) * kLog2e;
      fast_math::exp2_lanes<V, I>(e);
      sum += e;
      const I column = lane + static_cast<std::int32_t>(col0 + q * L);
      V candidate = z[q];
      if (skip_here)
        candidate = column == static_cast<std::int32_t>(skip) ? V{} - std::numeric_limits<float>::infinity() : candidate;
      const auto above = candidate > best_value;
      best_value = above ? candidate : best_value;
      best = above ? column : best;
    }
    std::memcpy(row.max + s * L, &m, sizeof m);
    std::memcpy(row.ref + s * L, &ref, sizeof ref);
    std::memcpy(row.exp_sum + s * L, &sum, sizeof sum);
    std::memcpy(row.best_value + s * L, &best_value, sizeof best_value);
    std::memcpy(row.best + s * L, &best, sizeof best);
  }
}

// y[0:R, 16 p0 : 16 (p0 + P)] = acc + beta * y, the plain product's store.
template <class V, int R, int P>
[[gnu::always_inline]] inline void store(const V (&acc)[R][P * kSplit<V>], const PackedMatrix& w, std::int64_t p0,
                                         float beta, float* y, std::int64_t ldy) {
  constexpr int S = kSplit<V>, L = kLanes<V>;
  for (int r = 0; r < R; ++r) {
    for (int p = 0; p < P; ++p) {
      const std::int64_t col = (p0 + p) * PackedMatrix::kPanel;
      const std::int64_t cols = std::min(PackedMatrix::kPanel, w.n() - col);
      float* y_r = y + r * ldy + col;
      if (cols == PackedMatrix::kPanel) {
        for (int s = 0; s < S; ++s) {
          V v = acc[r][p * S + s];
          if (beta != 0.0f) {  // beta 0 never reads y (it may hold NaN)
            V y_old;
            load(y_old, y_r + s * L);
            v += beta * y_old;
          }
          std::memcpy(y_r + s * L, &v, sizeof v);
        }
      } else {  // the last panel, past the end of y's row
        float out[PackedMatrix::kPanel];
        for (int s = 0; s < S; ++s) std::memcpy(out + s * L, &acc[r][p * S + s], sizeof(V));
        for (std::int64_t j = 0; j < cols; ++j) y_r[j] = beta == 0.0f ? out[j] : out[j] + beta * y_r[j];
      }
    }
  }
}

// y[0:R, 16 p0 : 16 (p0 + P)] = x[0:R] @ (panels p0 .. p0 + P - 1) + beta * y, where
// every one of the R * P * kSplit accumulators is a register: per k, P * kSplit
// loads of W and R broadcasts of x feed R * P * kSplit independent multiply-adds.
// Then the epilogue (Lanes): + bias, and the rows' summaries.
// E: with the epilogue; PF: with the prefetches. Each is a template flag so that
// a product without them runs none of their code: the prefetch's counters in
// the k loop take general registers a wide block needs for its row pointers,
// and the epilogue's checks would cost the plain products too.
// bench_lstm (the recurrent product) and bench_packed show the difference.
template <class V, int R, int P, bool XT, bool E, bool PF>
[[gnu::always_inline]] inline void block(const float* x, std::int64_t ldx, const PackedMatrix& w, std::int64_t p0,
                                         float beta, float* y, std::int64_t ldy, Prefetch pf, const Lanes& epi) {
  constexpr int S = kSplit<V>, L = kLanes<V>, Q = P * S;  // vectors per row of the block
  const std::int64_t K = w.k(), N = w.n();
  V acc[R][Q];
  for (int r = 0; r < R; ++r)
    for (int q = 0; q < Q; ++q) acc[r][q] = V{};
  const float* panel[P];
  for (int p = 0; p < P; ++p) panel[p] = w.panel(p0 + p);
  // beta != 0 reads the block of y after the k loop: its lines are asked for
  // now, so that they arrive while the loop runs: the LSTM layer's recurrent
  // product adds into a step's gate rows, 64 rows 120 KiB apart that come from
  // L3 (bench_lstm times the layer's forward).
  if (beta != 0.0f)
    for (int r = 0; r < R; ++r)
      for (int p = 0; p < P; ++p) {
        const std::int64_t col = (p0 + p) * PackedMatrix::kPanel;
        const float* y_rp = y + r * ldy + col;  // up to 16 values: one line or two
        __builtin_prefetch(y_rp, 1, 3);
        __builtin_prefetch(y_rp + std::min(PackedMatrix::kPanel, w.n() - col) - 1, 1, 3);
      }
  // Unrolled 4 times: the loop's own compare-and-branch and pointer steps
  // otherwise share the issue slots with the multiply-adds (bench_packed times
  // each instruction set's kernel at the shapes attend runs).
#pragma GCC unroll 4
  for (std::int64_t k = 0; k < K; ++k) {
    if constexpr (PF)
      for (std::int64_t line = k; line < pf.count; line += K) __builtin_prefetch(pf.lines + line * 64, 0, 2);
    V b[Q];
    for (int q = 0; q < Q; ++q) load(b[q], panel[q / S] + k * PackedMatrix::kPanel + (q % S) * L);
    for (int r = 0; r < R; ++r) {
      const float x_rk = x_at<XT>(x, ldx, r, k);
      for (int q = 0; q < Q; ++q) acc[r][q] += x_rk * b[q];  // y[r, n] += x[r, k] W[n, k]
    }
  }
  if constexpr (!E) {
    store<V, R, P>(acc, w, p0, beta, y, ldy);
    return;
  }
  // y = acc + bias + beta * y, row by row, then the row's summary from the same registers.
  for (int r = 0; r < R; ++r) {
    V z[Q];
    for (int p = 0; p < P; ++p) {
      const std::int64_t col = (p0 + p) * PackedMatrix::kPanel;
      const std::int64_t cols = std::min(PackedMatrix::kPanel, N - col);
      float* y_r = y + r * ldy + col;
      if (cols == PackedMatrix::kPanel) {
        for (int s = 0; s < S; ++s) {
          V v = acc[r][p * S + s];
          if (epi.bias != nullptr) {
            V b;
            load(b, epi.bias + col + s * L);
            v += b;
          }
          if (beta != 0.0f) {  // beta 0 never reads y (it may hold NaN)
            V y_old;
            load(y_old, y_r + s * L);
            v += beta * y_old;
          }
          if (epi.store_y) std::memcpy(y_r + s * L, &v, sizeof v);
          z[p * S + s] = v;
        }
      } else {  // the last panel, past the end of y's row
        float out[PackedMatrix::kPanel];
        for (int s = 0; s < S; ++s) std::memcpy(out + s * L, &acc[r][p * S + s], sizeof(V));
        for (std::int64_t j = 0; j < PackedMatrix::kPanel; ++j) {
          if (j >= cols) {
            out[j] = -std::numeric_limits<float>::infinity();  // for the summary only
            continue;
          }
          if (epi.bias != nullptr) out[j] += epi.bias[col + j];
          if (beta != 0.0f) out[j] += beta * y_r[j];
          if (epi.store_y) y_r[j] = out[j];
        }
        for (int s = 0; s < S; ++s) load(z[p * S + s], out + s * L);
      }
    }
    if (epi.rows != nullptr) summarise<V, Q>(z, p0 * PackedMatrix::kPanel, epi.skip, epi.rows[r]);
  }
}

// The same for rows = 1 .. R rows (the last rows of x).
template <class V, int R, int P, bool XT, bool E, bool PF>
[[gnu::always_inline]] inline void block_rows(std::int64_t rows, const float* x, std::int64_t ldx,
                                              const PackedMatrix& w, std::int64_t p0, float beta, float* y,
                                              std::int64_t ldy, Prefetch pf, const Lanes& epi) {
  if constexpr (R > 1) {
    if (rows < R) return block_rows<V, R - 1, P, XT, E, PF>(rows, x, ldx, w, p0, beta, y, ldy, pf, epi);
  }
  block<V, R, P, XT, E, PF>(x, ldx, w, p0, beta, y, ldy, pf, epi);
}

// Panels P at a time (then one at a time), and for each, R rows at a time: a
// panel (K x 16 floats) stays in L1 while every row block passes over it.
template <class V, int R, int P, bool XT, bool E, bool PF>
[[gnu::always_inline]] inline void product(std::int64_t M, const float* x, std::int64_t ldx, const PackedMatrix& w,
                                           float beta, float* y, std::int64_t ldy, const Lanes& epi,
                                           bool blocked = false) {
  const std::int64_t panels = (w.n() + PackedMatrix::kPanel - 1) / PackedMatrix::kPanel;
  // row i of x: i rows down, or (XT) i columns across
  // (blocked: x in blocks of R rows from row_blocks(), ldx = R)
  const auto rows_from = [&](std::int64_t i) { return XT ? (blocked ? x + i * w.k() : x + i) : x + i * ldx; };
  // With PF, while the row blocks pass over panels p0 .. p0 + P - 1, they
  // prefetch the next P panels into L2, a share each: the first block over a
  // panel would otherwise wait on it (see PackedMatrix::set_streamed).
  const std::int64_t blocks = (M + R - 1) / R, panel_lines = w.k() * PackedMatrix::kPanel * 4 / 64;
  const auto prefetch = [&](std::int64_t next, std::int64_t count, std::int64_t i) {
    const std::int64_t lines = std::min(count, panels - next) * panel_lines, share = (lines + blocks - 1) / blocks;
    if (!PF || lines <= 0) return Prefetch{};
    const std::int64_t first = i / R * share;
    return Prefetch{reinterpret_cast<const char*>(w.panel(next)) + first * 64,
                    std::max<std::int64_t>(0, std::min(share, lines - first))};
  };
  // the epilogue of rows i .. i + R - 1
  const auto epi_from = [&](std::int64_t i) {
    return Lanes{epi.bias, epi.rows == nullptr ? nullptr : epi.rows + i, epi.skip, epi.store_y};
  };
  std::int64_t p0 = 0;
  for (; p0 + P <= panels; p0 += P)
    for (std::int64_t i = 0; i < M; i += R)
      block_rows<V, R, P, XT, E, PF>(std::min<std::int64_t>(R, M - i), rows_from(i), ldx, w, p0, beta, y + i * ldy, ldy,
                              prefetch(p0 + P, P, i), epi_from(i));
  for (; p0 < panels; ++p0)
    for (std::int64_t i = 0; i < M; i += R)
      block_rows<V, R, 1, XT, E, PF>(std::min<std::int64_t>(R, M - i), rows_from(i), ldx, w, p0, beta, y + i * ldy, ldy,
                              prefetch(p0 + 1, 1, i), epi_from(i));
}

// x (M, K), rows ldx apart, as blocks of R rows, each k-major: block b holds
// x[b R + r][k] at b K R + k R + r (a last block of fewer rows leaves the rest
// unset and unread). In a buffer each thread keeps: no fresh pages per call.
template <int R>
const float* row_blocks(std::int64_t M, const float* x, std::int64_t ldx, std::int64_t K) {
  thread_local std::vector<float> blocks;
  const std::int64_t count = (M + R - 1) / R;
  blocks.resize(static_cast<std::size_t>(count * K * R));
  for (std::int64_t b = 0; b < count; ++b)
    for (std::int64_t r = 0; r < R && b * R + r < M; ++r) {
      const float* row = x + (b * R + r) * ldx;
      float* out = blocks.data() + b * K * R + r;
      for (std::int64_t k = 0; k < K; ++k) out[k * R] = row[k];
    }
  return blocks.data();
}

// The product with x as rows (R rows per block) or as its transpose (RT rows),
// with or without the epilogue, and (x as rows) with or without the prefetches:
// those where W is streamed and over kPrefetchAbove bytes: a weight that large
// does not stay in L2 from one decoding step to the next, while a smaller one
// (S training's) does, and prefetching it only costs (`attend bench` at configs
// S and M shows both).
template <class V, int R, int RT, int P>
[[gnu::always_inline]] inline void run_kernel(bool xt, std::int64_t M, const float* x, std::int64_t ldx,
                                              const PackedMatrix& w, float beta, float* y, std::int64_t ldy,
                                              const Lanes& epi) {
  constexpr std::int64_t kPrefetchAbove = 512 * 1024, kBlockedFromColumns = 2048;
  const bool e = epi.bias != nullptr || epi.rows != nullptr;
  const bool pf = w.streamed() && w.n() * w.k() * static_cast<std::int64_t>(sizeof(float)) > kPrefetchAbove;
  if (xt) {
    if (e) return product<V, RT, P, true, true, false>(M, x, ldx, w, beta, y, ldy, epi);
    return product<V, RT, P, true, false, false>(M, x, ldx, w, beta, y, ldy, epi);
  }
  // A streamed W of many panels (decoding's output projection) takes x in blocks
  // of R rows, each k-major (x_b[k][r]): the block's R broadcasts then come from
  // one pointer, where R row pointers had outgrown the 16 general registers and
  // were reloaded from the stack at every k. With fewer columns the copy of x
  // costs more than it saves (`attend bench --no-train` at config M decodes
  // through both kinds: the 8,000-column projection, the 1,024-column cell).
  if constexpr (R >= 6)
    if (pf && M >= 2 * R && w.n() >= kBlockedFromColumns) {
      const float* blocks = row_blocks<R>(M, x, ldx, w.k());
      if (e) return product<V, R, P, true, true, true>(M, blocks, R, w, beta, y, ldy, epi, true);
      return product<V, R, P, true, false, true>(M, blocks, R, w, beta, y, ldy, epi, true);
    }
  if (pf) {
    if (e) return product<V, R, P, false, true, true>(M, x, ldx, w, beta, y, ldy, epi);
    return product<V, R, P, false, false, true>(M, x, ldx, w, beta, y, ldy, epi);
  }
  if (e) return product<V, R, P, false, true, false>(M, x, ldx, w, beta, y, ldy, epi);
  product<V, R, P, false, false, false>(M, x, ldx, w, beta, y, ldy, epi);
}

}  // namespace

}  // namespace attend::blas::kernels
