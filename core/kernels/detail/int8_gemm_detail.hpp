#pragma once
// The int8 product's internals (core/kernels/int8_gemm.hpp), for core/kernels/
// and the tests that run each path: an int8 matrix's panels, the paths and the
// product with the path given.
#include <cstdint>
#include <vector>

#include "core/kernels/packed_gemm.hpp"

namespace attend::blas {

// An int8 W (N, K) as the kernels read it (layout: core/kernels/int8_gemm.hpp).
struct Int8Panels {
  std::int64_t k4 = 0;                 // K rounded up to 4
  std::vector<std::int8_t> values;     // ceil(N / 16) panels of 16 * k4 bytes
  std::vector<float> scales;           // (16 ceil(N / 16)), 0 past N
  std::vector<std::int32_t> row_sums;  // sum_k q[n, k], 0 past N
  const std::int8_t* panel(std::int64_t p) const { return values.data() + p * PackedMatrix::kPanel * k4; }
};

}  // namespace attend::blas

namespace attend::blas::detail {

// The quantization W's rows and x's rows share (core/kernels/int8_gemm.hpp):
float row_scale(const float* v, std::int64_t k);          // max_k |v_k| / 127; finite v only
std::int8_t quantize_value(float v, float scale);         // round(v / scale) in [-127, 127]; scale > 0

// The paths, one per instruction set; gemm_packed runs the widest this CPU has.
enum class Int8Kernel { Vnni, Avx2, Portable };
bool int8_kernel_runs(Int8Kernel kernel);  // on this CPU (Portable: always)
Int8Kernel int8_kernel();                  // the widest that runs
const char* int8_kernel_name(Int8Kernel kernel);

// x (m, k) quantized as the int8 kernels take it: u (m, k4) = round(x / s_i) + 128,
// 128 past k, and s (m), NaN for a row holding NaN or inf (its u all 128), by
// `kernel`'s instructions (int8_quantize.cpp); every kernel gives the same bytes.
void quantize_rows_of_x(std::int64_t m, const float* x, std::int64_t ldx, std::int64_t k, std::int64_t k4,
                        Int8Kernel kernel, std::uint8_t* u, float* s);

// gemm_packed with an int8 W, untimed, with the path given (tests run each one).
// Error when this CPU cannot run it, W is not int8, or as gemm_packed.
void int8_product(std::int64_t m, const float* x, std::int64_t ldx, const PackedMatrix& w, float beta, float* y,
                  std::int64_t ldy, Int8Kernel kernel, const Epilogue& epilogue = {});

}  // namespace attend::blas::detail
