// The int8 product's AVX2 path (core/kernels/int8_gemm.hpp). vpmaddubsw would
// multiply u8 by s8 directly, but it saturates the sum of each pair to int16
// (255 * 127 * 2 does not fit), so u and q are widened to int16 first and
// vpmaddwd adds each pair into int32: per group of 4 k, a panel's 64 bytes
// widen into 4 registers (4 rows of W x 4 k each), multiplied by the row's 4
// values of u, broadcast; lane pairs (2j, 2j + 1) hold row j's two halves, added
// once after the k loop. 2 rows x 1 panel: 8 accumulators, 4 of W, 1 of u.
#include "core/kernels/detail/int8_kernel.hpp"

namespace attend::blas::kernels {

#if defined(ATTEND_PACKED_WIDE)
namespace {

using H16 = std::int16_t __attribute__((vector_size(32)));  // 16 int16: one AVX2 register
using B16 = std::int8_t __attribute__((vector_size(16)));   // 16 int8: a quarter of a panel's group

// The builtin returns a vector wider than the baseline's registers, which GCC
// warns changes the ABI; dots() is always inlined into the path's function,
// compiled for the wider target, so no such call is ever made.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"
struct Avx2Dots {
  template <int R, int P>
  [[gnu::always_inline]] static inline void dots(const std::uint8_t* u, const detail::Int8Panels& w,
                                                 std::int64_t p0, Dots<R, P>& dot) {
    constexpr std::int64_t kGroup = 4 * PackedMatrix::kPanel;  // bytes of a panel per group of 4 k
    I8 acc[R][P][4];
    for (int r = 0; r < R; ++r)
      for (int p = 0; p < P; ++p)
        for (int c = 0; c < 4; ++c) acc[r][p][c] = I8{};
    const std::int8_t* panel[P];
    for (int p = 0; p < P; ++p) panel[p] = w.panel(p0 + p);
    for (std::int64_t g = 0; g < w.k4 / 4; ++g) {
      H16 b[P][4];  // rows 4c .. 4c + 3 of the panel, 4 k each, as int16
      for (int p = 0; p < P; ++p)
        for (int c = 0; c < 4; ++c) {
          B16 bytes;
          std::memcpy(&bytes, panel[p] + g * kGroup + c * 16, sizeof bytes);
          b[p][c] = __builtin_convertvector(bytes, H16);
        }
      for (int r = 0; r < R; ++r) {
        // u[r, 4g .. 4g + 3] as 4 int16, repeated 4 times
        const std::uint8_t* q = u + r * w.k4 + 4 * g;
        const std::uint64_t quad = std::uint64_t{q[0]} | std::uint64_t{q[1]} << 16 | std::uint64_t{q[2]} << 32 |
                                   std::uint64_t{q[3]} << 48;
        using L4 = std::uint64_t __attribute__((vector_size(32)));
        const H16 a = reinterpret_cast<H16>(L4{} + quad);
        for (int p = 0; p < P; ++p)
          for (int c = 0; c < 4; ++c) acc[r][p][c] += __builtin_ia32_pmaddwd256(a, b[p][c]);
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
                                                         const detail::Int8Panels& w, std::int64_t N, float beta,
                                                         float* y, std::int64_t ldy, const Lanes& epi) {
  int8_run<Avx2Dots, V8, 2, 1>(M, u, s, w, N, beta, y, ldy, epi);
}
#endif

}  // namespace attend::blas::kernels
