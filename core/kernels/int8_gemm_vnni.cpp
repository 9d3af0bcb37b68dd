// The int8 product's AVX-512 VNNI path (core/kernels/int8_gemm.hpp): per group
// of 4 k, one vpdpbusd per row and panel multiplies the row's 4 bytes of u,
// broadcast, by the panel's 64 bytes (16 rows of W x 4 k) and adds each row of
// W's 4 products into its int32 lane. 6 rows x 4 panels: 24 accumulators, 4
// loads of W and 6 broadcasts of u per group, as the float AVX-512 kernel's
// block (core/kernels/detail/packed_kernel.hpp).
#include "core/kernels/detail/int8_kernel.hpp"

namespace attend::blas::kernels {

#if defined(ATTEND_PACKED_WIDE)
namespace {

// The builtin returns a vector wider than the baseline's registers, which GCC
// warns changes the ABI; dots() is always inlined into the path's function,
// compiled for the wider target, so no such call is ever made.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"
struct VnniDots {
  template <int R, int P>
  [[gnu::always_inline]] static inline void dots(const std::uint8_t* u, const Int8Panels& w,
                                                 std::int64_t p0, Dots<R, P>& dot) {
    constexpr std::int64_t kGroup = 4 * PackedMatrix::kPanel;  // bytes of a panel per group of 4 k
    I16 acc[R][P];
    for (int r = 0; r < R; ++r)
      for (int p = 0; p < P; ++p) acc[r][p] = I16{};
    const std::int8_t* panel[P];
    for (int p = 0; p < P; ++p) panel[p] = w.panel(p0 + p);
#pragma GCC unroll 4
    for (std::int64_t g = 0; g < w.k4 / 4; ++g) {
      I16 b[P];
      for (int p = 0; p < P; ++p) std::memcpy(&b[p], panel[p] + g * kGroup, sizeof b[p]);
      for (int r = 0; r < R; ++r) {
        std::int32_t quad;  // u[r, 4g .. 4g + 3]
        std::memcpy(&quad, u + r * w.k4 + 4 * g, sizeof quad);
        const I16 a = I16{} + quad;
        for (int p = 0; p < P; ++p) acc[r][p] = __builtin_ia32_vpdpbusd_v16si(acc[r][p], a, b[p]);
      }
    }
    for (int r = 0; r < R; ++r)
      for (int p = 0; p < P; ++p) std::memcpy(dot[r] + p * PackedMatrix::kPanel, &acc[r][p], sizeof acc[r][p]);
  }
};
#pragma GCC diagnostic pop

}  // namespace

__attribute__((target("arch=x86-64-v4,avx512vnni"))) void int8_vnni(std::int64_t M, const std::uint8_t* u,
                                                                    const float* s, const Int8Panels& w,
                                                                    std::int64_t N, float beta, float* y,
                                                                    std::int64_t ldy, const Lanes& epi) {
  int8_run<VnniDots, V16, 6, 4>(M, u, s, w, N, beta, y, ldy, epi);
}
#endif

}  // namespace attend::blas::kernels
