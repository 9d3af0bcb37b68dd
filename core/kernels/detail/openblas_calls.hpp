#pragma once
// A test hook into core/kernels/blas.cpp's lock around OpenBLAS: how many calls
// were inside OpenBLAS at once while it had more than one thread, at most, since
// the last reset. The lock keeps it at 1 (tests/core/kernels/test_blas_threads.cpp).
namespace attend::blas::detail {

int most_openblas_calls_at_once();
void reset_openblas_calls_at_once();

}  // namespace attend::blas::detail
