// The packed product's AVX-512 kernel: 8 rows x 2 panels (core/packed_kernel.hpp),
// and the column summaries' (core/summary_kernel.hpp).
#include "core/packed_kernel.hpp"
#include "core/summary_kernel.hpp"

namespace attend::blas::kernels {

#if defined(ATTEND_PACKED_WIDE)
__attribute__((target("arch=x86-64-v4"))) void run_avx512(bool xt, std::int64_t M, const float* x, std::int64_t ldx,
                                                           const PackedMatrix& w, float beta, float* y,
                                                           std::int64_t ldy, const Lanes& epi) {
  run_kernel<V16, 8, 6, 2>(xt, M, x, ldx, w, beta, y, ldy, epi);
}

// 4 columns x 4 panels: 16 accumulators, fed by 4 loads of x and 4 broadcasts
// of W per k (8 columns x 2 panels: ~4% slower at M decoding's sizes, W in
// cache, alternating in one process); a panel left over: 8 columns.
__attribute__((target("arch=x86-64-v4"))) void summarise_avx512(std::int64_t N, const float* w, std::int64_t ldw,
                                                                 const PackedMatrix& xp, const float* bias,
                                                                 std::int64_t skip, ColumnLanes* lanes) {
  run_summary<V16, 4, 4, 8>(N, w, ldw, xp, bias, skip, lanes);
}
#endif

}  // namespace attend::blas::kernels
