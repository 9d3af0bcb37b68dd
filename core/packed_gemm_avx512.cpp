// The packed product's AVX-512 kernel: 8 rows x 2 panels (core/packed_kernel.hpp).
#include "core/packed_kernel.hpp"

namespace attend::blas::kernels {

#if defined(ATTEND_PACKED_WIDE)
__attribute__((target("arch=x86-64-v4"))) void run_avx512(bool xt, std::int64_t M, const float* x, std::int64_t ldx,
                                                           const PackedMatrix& w, float beta, float* y,
                                                           std::int64_t ldy, const Lanes& epi) {
  run_kernel<V16, 8, 6, 2>(xt, M, x, ldx, w, beta, y, ldy, epi);
}
#endif

}  // namespace attend::blas::kernels
