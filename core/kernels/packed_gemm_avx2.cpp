// The packed product's AVX2 kernel: 6 rows x 1 panel (core/kernels/detail/packed_kernel.hpp),
// and the column summaries' (core/kernels/detail/summary_kernel.hpp).
#include "core/kernels/detail/packed_kernel.hpp"
#include "core/kernels/detail/summary_kernel.hpp"

namespace attend::blas::kernels {

#if defined(ATTEND_PACKED_WIDE)
__attribute__((target("arch=x86-64-v3"))) void run_avx2(bool xt, std::int64_t M, const float* x, std::int64_t ldx,
                                                         const PackedMatrix& w, float beta, float* y,
                                                         std::int64_t ldy, const Lanes& epi) {
  run_kernel<V8, 6, 6, 1>(xt, M, x, ldx, w, beta, y, ldy, epi);
}

// 6 columns x 1 panel (two registers): 12 accumulators, as the product's.
__attribute__((target("arch=x86-64-v3"))) void summarise_avx2(std::int64_t N, const float* w, std::int64_t ldw,
                                                               const PackedMatrix& xp, const float* bias,
                                                               std::int64_t skip, bool sums, ColumnLanes* lanes) {
  run_summary<V8, 6, 1, 6>(N, w, ldw, xp, bias, skip, sums, lanes);
}
#endif

}  // namespace attend::blas::kernels
