// The packed product's AVX2 kernel: 6 rows x 1 panel (core/packed_kernel.hpp).
#include "core/packed_kernel.hpp"

namespace attend::blas::kernels {

#if defined(ATTEND_PACKED_WIDE)
__attribute__((target("arch=x86-64-v3"))) void run_avx2(bool xt, std::int64_t M, const float* x, std::int64_t ldx,
                                                         const PackedMatrix& w, float beta, float* y,
                                                         std::int64_t ldy, const Lanes& epi) {
  run_kernel<V8, 6, 6, 1>(xt, M, x, ldx, w, beta, y, ldy, epi);
}
#endif

}  // namespace attend::blas::kernels
