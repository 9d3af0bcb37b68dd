// The int8 product's AVX2 path (core/kernels/int8_gemm.hpp). vpmaddubsw would
// multiply u8 by s8 directly, but it saturates the sum of each pair to int16
// (255 * 127 * 2 does not fit), so u and q are widened to int16 first and
// vpmaddwd adds each pair into int32: per group of 4 k, a panel's 64 bytes
// widen into 4 registers (4 rows of W x 4 k each), one at a time, each
// multiplied by every block row's 4 values of u (widened once per product),
// broadcast; lane pairs (2j, 2j + 1) hold row j's two halves, added once after
// the k loop. 3 rows x 1 panel: 12 accumulators, 3 of u, 1 of W and the
// product before its add, 17 of the 16 registers: one accumulator lives on
// the stack (bench_int8 times the path).
#include <vector>

#include "core/kernels/detail/int8_kernel.hpp"

namespace attend::blas::kernels {

#if defined(ATTEND_PACKED_WIDE)
namespace {

using H16 = std::int16_t __attribute__((vector_size(32)));  // 16 int16: one AVX2 register
using B16 = char __attribute__((vector_size(16)));   // 16 int8: a quarter of a panel's group

// The builtin returns a vector wider than the baseline's registers, which GCC
// warns changes the ABI; dots() is always inlined into the path's function,
// compiled for the wider target, so no such call is ever made.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"
struct Avx2Dots {
  template <int R, int P>
  [[gnu::always_inline]] static inline void dots(const std::int16_t* u, const Int8Panels& w,
                                                 std::int64_t p0, Dots<R, P>& dot) {
    constexpr std::int64_t kGroup = 4 * PackedMatrix::kPanel;  // bytes of a panel per group of 4 k
    I8 acc[R][P][4];
    for (int r = 0; r < R; ++r)
      for (int p = 0; p < P; ++p)
        for (int c = 0; c < 4; ++c) acc[r][p][c] = I8{};
    const std::int8_t* panel[P];
    for (int p = 0; p < P; ++p) panel[p] = w.panel(p0 + p);
    for (std::int64_t g = 0; g < w.k4 / 4; ++g) {
      using L4 = std::uint64_t __attribute__((vector_size(32)));
      H16 a[R];  // u[r, 4g .. 4g + 3] as 4 int16, repeated 4 times
      for (int r = 0; r < R; ++r) {
        std::uint64_t quad;
        std::memcpy(&quad, u + r * w.k4 + 4 * g, sizeof quad);
        const L4 repeated = L4{} + quad;
        std::memcpy(&a[r], &repeated, sizeof a[r]);
      }
      // rows 4c .. 4c + 3 of each panel, 4 k each, widened to int16 one at a time
      for (int p = 0; p < P; ++p)
        for (int c = 0; c < 4; ++c) {
          B16 bytes;
          std::memcpy(&bytes, panel[p] + g * kGroup + c * 16, sizeof bytes);
          // vpmovsxbw: __builtin_convertvector became two halves and an insert
          const H16 b = __builtin_ia32_pmovsxbw256(bytes);
          for (int r = 0; r < R; ++r) acc[r][p][c] += __builtin_ia32_pmaddwd256(a[r], b);
        }
    }
    for (int r = 0; r < R; ++r)
      for (int p = 0; p < P; ++p)
        for (int c = 0; c < 4; ++c)
          for (int j = 0; j < 4; ++j)  // row 4c + j: lanes 2j and 2j + 1
            dot[r][p * PackedMatrix::kPanel + 4 * c + j] = acc[r][p][c][2 * j] + acc[r][p][c][2 * j + 1];
  }
};
#pragma GCC diagnostic pop

}  // namespace

__attribute__((target("arch=x86-64-v3"))) void int8_avx2(std::int64_t M, const std::uint8_t* u, const float* s,
                                                         const Int8Panels& w, std::int64_t N, float beta,
                                                         float* y, std::int64_t ldy, const Lanes& epi) {
  // u widened to int16 once, so that a row's 4 values per group are one
  // broadcast load; in a buffer each thread keeps: no fresh pages per call.
  thread_local std::vector<std::int16_t> wide;
  wide.assign(u, u + M * w.k4);
  int8_run<Avx2Dots, V8, 3, 1>(M, wide.data(), s, w, N, beta, y, ldy, epi);
}
#endif

}  // namespace attend::blas::kernels
