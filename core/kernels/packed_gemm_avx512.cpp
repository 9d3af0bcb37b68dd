// The packed product's AVX-512 kernel: 6 rows x 4 panels (core/kernels/detail/packed_kernel.hpp),
// and the column summaries' (core/kernels/detail/summary_kernel.hpp).
#include "core/kernels/detail/packed_kernel.hpp"
#include "core/kernels/detail/summary_kernel.hpp"

namespace attend::blas::kernels {

#if defined(ATTEND_PACKED_WIDE)
__attribute__((target("arch=x86-64-v4"))) void run_avx512(bool xt, std::int64_t M, const float* x, std::int64_t ldx,
                                                           const PackedMatrix& w, float beta, float* y,
                                                           std::int64_t ldy, const Lanes& epi) {
  run_kernel<V16, 6, 6, 4>(xt, M, x, ldx, w, beta, y, ldy, epi);
}

// 6 columns x 4 panels: 24 accumulators, fed by 4 loads of x and 6 broadcasts
// of W per k, 29 of the 32 registers in the k loop (4 columns x 4 panels has 16
// accumulators and 8 loads per 16 multiply-adds). bench_kernel_shapes times it
// against 4 x 4, 5 x 4 and 8 x 2 at the shapes greedy decoding runs; see
// docs/kernels.md. A panel left over: 8 columns.
__attribute__((target("arch=x86-64-v4"))) void summarise_avx512(std::int64_t N, const float* w, std::int64_t ldw,
                                                                 const PackedMatrix& xp, const float* bias,
                                                                 std::int64_t skip, bool sums, ColumnLanes* lanes) {
  run_summary<V16, 6, 4, 8>(N, w, ldw, xp, bias, skip, sums, lanes);
}
#endif

}  // namespace attend::blas::kernels
