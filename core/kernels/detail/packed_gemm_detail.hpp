#pragma once
// The packed product's internals, for core/kernels/ and the tests and benchmarks
// that run each instruction set's kernel (users include core/kernels/packed_gemm.hpp):
// the kernel choice, the untimed products with the kernel given, and
// gemm_by_packing, which blas::gemm runs for float32 (blas.cpp).
#include <cstdint>

#include "core/kernels/packed_gemm.hpp"

namespace attend::blas {

namespace detail {
// The kernels, one per instruction set; gemm_packed runs the widest this CPU has.
enum class PackedKernel { Avx512, Avx2, Baseline };
bool packed_kernel_runs(PackedKernel kernel);  // on this CPU (Baseline: always)
PackedKernel packed_kernel();                  // the widest that runs
void check_epilogue(float beta, const Epilogue& epilogue);  // Error on store_y false without rows or with beta
// The product alone, untimed, with the kernel given (tests run each one):
// Error when this CPU cannot run it.
void packed_product(std::int64_t m, const float* x, std::int64_t ldx, const PackedMatrix& w, float beta, float* y,
                    std::int64_t ldy, PackedKernel kernel, const Epilogue& epilogue = {});
// The same with x given as its transpose: xt (K, m), rows ldxt apart (ldxt >= m).
void packed_product_xt(std::int64_t m, const float* xt, std::int64_t ldxt, const PackedMatrix& w, float beta,
                       float* y, std::int64_t ldy, PackedKernel kernel, const Epilogue& epilogue = {});

// summarise_rows, untimed, with the kernel given (tests run each one).
void summarise_rows(std::int64_t m, const float* x, std::int64_t ldx, const float* w, std::int64_t n, std::int64_t k,
                    std::int64_t ldw, const float* bias, std::int64_t skip, RowSummary* rows, PackedKernel kernel,
                    SummaryParts parts = SummaryParts::All);

// C (m, n) = op(A) @ op(B) + beta * C, as blas::gemm with alpha 1 (blas.hpp), on
// the packed kernel: op(B) is packed afresh (as W = op(B)^T). When trans_a, A is
// read down its columns (packed_product_xt) where k is small, and transposed into
// rows first where it is not (see kColumnsUpTo in packed_gemm.cpp). What blas::gemm runs for
// float32 where this kernel is the faster (blas.cpp). Error on strides below
// the sizes, as PackedMatrix.
void gemm_by_packing(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, const float* a,
                     std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c, std::int64_t ldc,
                     PackedKernel kernel);
}  // namespace detail

}  // namespace attend::blas
