#pragma once
// dst (b, a) = src (a, b)^T (or +=), 16 x 16 tiles at a time: row by row, one of
// the two sides strides a whole row per element and leaves the cache line
// behind; in tiles both sides reuse each line they touch. Used by the transpose
// op (autograd/ops/shape.cpp) and by float32 products that need op(A) = A^T as rows
// for the packed kernel (core/kernels/packed_gemm.cpp).
#include <algorithm>
#include <cstdint>
#include <type_traits>

#if defined(__SSE2__)
#include <xmmintrin.h>
#endif

namespace attend {

// Rows of src are lds apart, rows of dst ldd apart.
// Each tile prefetches, for writing, its rows' lines of the tile kAhead tiles
// further along: where dst is not in cache, the stores otherwise missed one
// after another. The LSTM layer's backward puts each step's da (B, 4H) into
// columns of da^T (4H, T*B), 7.8 MB at B = 64, T = 30, H = 256, out of cache:
// 4 lines in each of 1,024 rows, each store a miss that waits for the one before.
// bench_lstm_onednn times the layer's backward against oneDNN's.
template <class T, bool kAccumulate>
void transpose_tiles(const T* src, std::int64_t lds, T* dst, std::int64_t ldd, std::int64_t a, std::int64_t b) {
  constexpr std::int64_t kTile = 16, kAhead = 8;
  for (std::int64_t i0 = 0; i0 < a; i0 += kTile)
    for (std::int64_t j0 = 0; j0 < b; j0 += kTile) {
      const std::int64_t i1 = std::min(i0 + kTile, a), j1 = std::min(j0 + kTile, b);
      // a row's part of a tile is at most 16 values: one line, or two where it straddles
      for (std::int64_t j = j0 + kAhead * kTile; j < std::min(j0 + (kAhead + 1) * kTile, b); ++j) {
        __builtin_prefetch(dst + j * ldd + i0, 1, 3);
        __builtin_prefetch(dst + j * ldd + (i1 - 1), 1, 3);
      }
      std::int64_t i4 = i0, j4 = j0;  // where the 4 x 4 blocks end
#if defined(__SSE2__)
      if constexpr (std::is_same_v<T, float> && !kAccumulate) {
        // Whole 4 x 4 blocks by SSE: four rows in, transposed in registers,
        // four rows out (a scalar loop moved one float per cycle at best).
        i4 = i0 + (i1 - i0) / 4 * 4;
        j4 = j0 + (j1 - j0) / 4 * 4;
        for (std::int64_t i = i0; i < i4; i += 4)
          for (std::int64_t j = j0; j < j4; j += 4) {
            __m128 r0 = _mm_loadu_ps(src + i * lds + j), r1 = _mm_loadu_ps(src + (i + 1) * lds + j);
            __m128 r2 = _mm_loadu_ps(src + (i + 2) * lds + j), r3 = _mm_loadu_ps(src + (i + 3) * lds + j);
            _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
            _mm_storeu_ps(dst + j * ldd + i, r0);
            _mm_storeu_ps(dst + (j + 1) * ldd + i, r1);
            _mm_storeu_ps(dst + (j + 2) * ldd + i, r2);
            _mm_storeu_ps(dst + (j + 3) * ldd + i, r3);
          }
      }
#endif
      // The rest: everything, or the edges the blocks left (rows from i4, columns from j4).
      for (std::int64_t j = j0; j < j1; ++j)
        for (std::int64_t i = (j < j4 ? i4 : i0); i < i1; ++i) {
          if constexpr (kAccumulate) dst[j * ldd + i] += src[i * lds + j];
          else dst[j * ldd + i] = src[i * lds + j];
        }
    }
}

}  // namespace attend
