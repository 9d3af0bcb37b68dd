#pragma once
// y = x @ W^T with W packed once: for the products decoding repeats at every
// output step with the same weights and a few rows (the output projection: 16
// rows against a (1000, 64) W at the default sizes). OpenBLAS packs both
// operands afresh at every call, and at 16 rows copying W costs about as much as
// multiplying by it. Packing it once per search leaves only the multiply-adds
// (bench_packed; `attend bench --no-train` times decoding).
//
// Letters: x (M, K) the rows, W (N, K) as a linear layer's weight, y (M, N).
// float, or int8 weights (PackedMatrix::from_int8, core/kernels/int8_gemm.hpp); blas::gemm(false,
// true, ...) is the float oracle (tests/core/kernels/test_packed_gemm.cpp).
#include <cstdint>
#include <limits>
#include <memory>
#include <span>

#include "core/tensor.hpp"

namespace attend::blas {

// An int8 matrix's panels, scales and row sums: opaque here, defined in
// detail/int8_gemm_detail.hpp, which the kernels include.
struct Int8Panels;

class PackedMatrix {
 public:
  static constexpr std::int64_t kPanel = 16;  // columns of y per panel: one AVX-512 register of floats

  PackedMatrix() = default;
  // W (n, k), rows ldw apart (ldw >= k). Error on negative sizes or ldw < k.
  PackedMatrix(const float* w, std::int64_t n, std::int64_t k, std::int64_t ldw);
  // W given as its transpose: wt (k, n), rows ldwt apart (ldwt >= n), so that
  // products compute x @ wt. For x @ A with A (k, n) stored as it is (the backward
  // of a product by A^T).
  static PackedMatrix from_transposed(const float* wt, std::int64_t n, std::int64_t k, std::int64_t ldwt);
  // The same with W^T's k rows wherever each is: row kk (n floats) at rows[kk].
  // For W^T's rows in another order than memory's (the LSTM layer's backward
  // packs x's rows (b, t) step by step, as its da^T's columns run). Error on a
  // null row.
  static PackedMatrix from_transposed_rows(std::span<const float* const> rows, std::int64_t n);
  // W quantized to int8 per row: q (n, k) row-major in [-127, 127], W[r] ~ scales[r] * q[r]
  // (blas::quantize_rows gives both). gemm_packed then runs the int8 kernel
  // (core/kernels/int8_gemm.hpp). Error on negative sizes, k above kInt8MaxK, a
  // value of -128, a null pointer with n k > 0, or a scale that is negative or not finite.
  static PackedMatrix from_int8(const std::int8_t* q, const float* scales, std::int64_t n, std::int64_t k);
  // The int8 kernel adds up to 255 * 127 per k in int32: K at most (2^31 - 1) / (255 * 127).
  static constexpr std::int64_t kInt8MaxK = 66311;

  std::int64_t n() const { return n_; }
  std::int64_t k() const { return k_; }
  bool empty() const { return n_ == 0; }
  bool int8() const { return int8_ != nullptr; }
  // Streamed: the caller's loop touches more than L2 holds between two products
  // by W (decoding's step: 11 MB of weights at config M), so W's panels come
  // from L3 at every product. The kernel then prefetches the next panels into
  // L2 while it works, where W is over 512 KiB. Not for a W that stays in L2
  // between products (the LSTM layer's W_hh): there the prefetches only cost.
  void set_streamed(bool on) { streamed_ = on; }
  bool streamed() const { return streamed_; }
  // Panel p: (k, 16), row kk holding W[16p + j][kk] for j = 0..15, zeros past n.
  // A float matrix's only: Error on an int8 one (which has no float panels).
  const float* panel(std::int64_t p) const {
    if (int8_ != nullptr) [[unlikely]] float_panel_of_int8();
    return data_.data<float>() + p * k_ * kPanel;
  }
  // An int8 matrix's panels (detail/int8_gemm_detail.hpp); Error on a float one.
  const Int8Panels& int8_panels() const;

 private:
  PackedMatrix(std::int64_t n, std::int64_t k);  // zeros, for the two packers
  [[noreturn]] static void float_panel_of_int8();
  std::int64_t n_ = 0, k_ = 0;
  bool streamed_ = false;
  // ceil(n / 16) panels, one after another. A tensor, so that its memory comes
  // from the storage cache (core/storage.hpp), as a training step packs again
  // every time: fresh pages cost more than packing here.
  Tensor data_;
  // An int8 matrix's panels instead of data_ (empty then): shared, as copies of
  // a packed matrix are (the Tensor above shares its storage too).
  std::shared_ptr<const Int8Panels> int8_;
};

// What decoding reads of a row z of logits (one row of y): its maximum and
// normaliser, and the best token. The kernel gathers them from the registers
// that hold each block of y, so that no pass over the (m, N) logits follows the
// product (M greedy decoding: 64 rows of 8,000 read three times per step).
struct RowSummary {
  float max = -std::numeric_limits<float>::infinity();         // max_n z_n, NaN passed over
  // sum_n e^(z_n - max), fast_math::exp; NaN with a NaN z_n, or where not asked
  // for (SummaryParts::MaxAndBest); meaningless while max is -inf
  double exp_sum = 0;
  float best_value = -std::numeric_limits<float>::infinity();  // max_n z_n over n != skip
  std::int64_t best = -1;  // the first n != skip with z_n == best_value; -1 when no z_n is above -inf
};

// What the product does to each block of y besides multiplying:
//   y = x @ W^T + bias + beta * y   (bias (N), or null)
// and, when rows is not null, rows[i] summarises row i of y (m summaries, with
// `skip` left out of the best token; -1 leaves out none). With store_y false, y
// is neither read nor written: the summaries are all the product gives (greedy
// decoding, which reads nothing else of a row whose summary is usable: storing
// its logits, 64 x 8,000 floats at config M, would add memory traffic the
// summaries do not need; `attend bench --no-train` times greedy decoding).
// That needs rows and beta 0 (Error otherwise); y must still be a valid buffer.
struct Epilogue {
  const float* bias = nullptr;
  RowSummary* rows = nullptr;
  std::int64_t skip = -1;
  bool store_y = true;
};

// y (m, N) = x (m, K) @ W^T + beta * y, with W packed; rows of x ldx apart,
// rows of y ldy apart, and the epilogue (bias, row summaries). beta 0 never
// reads y. Counted by gemm_stats() as a (false, true, m, N, K) product marked
// packed (blas.cpp). Error when ldx < K or ldy < N. An int8 W
// (PackedMatrix::from_int8) runs the int8 kernel: x quantized per row, see
// core/kernels/int8_gemm.hpp for what it computes and how far from the float product.
void gemm_packed(std::int64_t m, const float* x, std::int64_t ldx, const PackedMatrix& w, float beta, float* y,
                 std::int64_t ldy, const Epilogue& epilogue = {});

// The row summaries of y = x @ W^T + bias (m, n) as gemm_packed's epilogue
// gives them with store_y false, but from W as it is: (n, k), rows ldw apart,
// not packed. The product runs turned around, y^T = W @ x^T, with x packed
// instead (it has few rows: W at M decoding has 8 MB, which need not be packed
// once per search), and each lane of an accumulator is one row of y, so that a
// row's summary is kept lane-wise (core/kernels/detail/summary_kernel.hpp), with
// no 8 MB copy of W. bench_kernel_shapes times it at M greedy decoding's
// projection; `attend bench --no-train` times greedy decoding. rows (m); bias (n)
// or null; `skip` as in Epilogue. The logits are bit for bit those of
// gemm_packed; the sums are added in another order. Counted by gemm_stats() as
// gemm_packed is. Error when ldx < k, ldw < k, n > 2^31 - 1 or rows is null.
// parts MaxAndBest leaves out the sums: exp_sum is NaN, and the kernel takes
// no exponential (greedy decoding without scores, which reads only each row's
// best token; `attend bench` times greedy with and without scores); max, best and best_value are
// those that All gives.
enum class SummaryParts { All, MaxAndBest };
void summarise_rows(std::int64_t m, const float* x, std::int64_t ldx, const float* w, std::int64_t n, std::int64_t k,
                    std::int64_t ldw, const float* bias, std::int64_t skip, RowSummary* rows,
                    SummaryParts parts = SummaryParts::All);

}  // namespace attend::blas
