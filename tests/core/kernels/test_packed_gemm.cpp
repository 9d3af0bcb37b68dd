// core/kernels/packed_gemm: y = x @ W^T + beta * y with W packed once, held to
// OpenBLAS's blas::gemm(false, true, ...) (the oracle) on every kind of edge: row
// counts that fill no row block, columns that fill no panel, an odd number of
// panels, strides wider than the rows, beta 0 (y never read), 1 and other; the
// empty products; the argument checks; and its place in the timing counts. Then
// the products blas::gemm hands to it (gemm_by_packing), every transposition.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "core/kernels/blas.hpp"
#include "core/error.hpp"
#include "core/kernels/detail/packed_gemm_detail.hpp"
#include "core/kernels/packed_gemm.hpp"
#include "core/random.hpp"

using namespace attend;

namespace {

std::vector<float> random_values(std::size_t n, Generator& gen) {
  std::vector<float> v(n);
  for (float& x : v) x = static_cast<float>(gen.uniform(-1, 1));
  return v;
}

using blas::detail::PackedKernel;

// While one lives, blas::gemm runs OpenBLAS for float32 too: the oracle.
struct OpenBlasOnly {
  bool was = blas::set_packed_routing(false);
  ~OpenBlasOnly() { blas::set_packed_routing(was); }
};

// The kernels this CPU runs (the baseline always; AVX2 and AVX-512 where it has them).
std::vector<PackedKernel> kernels_here() {
  std::vector<PackedKernel> out;
  for (PackedKernel k : {PackedKernel::Avx512, PackedKernel::Avx2, PackedKernel::Baseline})
    if (blas::detail::packed_kernel_runs(k)) out.push_back(k);
  return out;
}

// got against expected (gemm), element by element; the padding past each row
// (the stride) as it was in y0.
void check_result(const std::vector<float>& got, const std::vector<float>& expected, const std::vector<float>& y0,
                  std::int64_t M, std::int64_t N, std::int64_t K, std::int64_t ldy) {
  double worst = 0;
  for (std::int64_t i = 0; i < M; ++i)
    for (std::int64_t j = 0; j < ldy; ++j) {
      const std::size_t at = static_cast<std::size_t>(i * ldy + j);
      if (j >= N) {
        REQUIRE(got[at] == y0[at]);  // the stride's padding
        continue;
      }
      REQUIRE(std::isfinite(got[at]));
      worst = std::max(worst, static_cast<double>(std::fabs(got[at] - expected[at])));
    }
  // float sums of K products of numbers in [-1, 1], in two orders
  CHECK(worst <= 1e-6 * static_cast<double>(K + 2));
}

// Both products from the same y, compared element by element, for gemm_packed
// and for each kernel this CPU runs; the padding past each row (the strides)
// must come back untouched.
void check_against_gemm(std::int64_t M, std::int64_t N, std::int64_t K, std::int64_t pad, float beta, Generator& gen) {
  CAPTURE(M);
  CAPTURE(N);
  CAPTURE(K);
  CAPTURE(pad);
  CAPTURE(beta);
  const std::int64_t ldx = K + pad, ldw = K + pad, ldy = N + pad;
  const std::vector<float> x = random_values(static_cast<std::size_t>(std::max<std::int64_t>(M * ldx, 1)), gen);
  const std::vector<float> w = random_values(static_cast<std::size_t>(std::max<std::int64_t>(N * ldw, 1)), gen);
  std::vector<float> y0 = random_values(static_cast<std::size_t>(std::max<std::int64_t>(M * ldy, 1)), gen);
  if (beta == 0.0f)  // beta 0 must not read y: NaN there stays out of the result
    for (std::int64_t i = 0; i < M; ++i)
      for (std::int64_t j = 0; j < N; ++j) y0[i * ldy + j] = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> expected = y0;
  {
    const OpenBlasOnly oracle;
    blas::gemm(false, true, M, N, K, 1.0f, x.data(), ldx, w.data(), ldw, beta, expected.data(), ldy);
  }
  const blas::PackedMatrix packed(w.data(), N, K, ldw);
  CHECK(packed.n() == N);
  CHECK(packed.k() == K);
  std::vector<float> got = y0;
  blas::gemm_packed(M, x.data(), ldx, packed, beta, got.data(), ldy);
  check_result(got, expected, y0, M, N, K, ldy);
  // The same W packed from its transpose W^T (K, N), rows ldw apart
  std::vector<float> wt(static_cast<std::size_t>(std::max<std::int64_t>(K * ldy, 1)), 7.0f);
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t k = 0; k < K; ++k) wt[k * ldy + n] = w[n * ldw + k];
  const blas::PackedMatrix from_t = blas::PackedMatrix::from_transposed(wt.data(), N, K, ldy);
  got = y0;
  blas::gemm_packed(M, x.data(), ldx, from_t, beta, got.data(), ldy);
  check_result(got, expected, y0, M, N, K, ldy);
  // And from W^T's rows given one by one, stored in reverse order
  std::vector<float> wt_reversed(wt.size(), 7.0f);
  std::vector<const float*> rows(static_cast<std::size_t>(K));
  for (std::int64_t k = 0; k < K; ++k) {
    std::copy_n(wt.data() + k * ldy, N, wt_reversed.data() + (K - 1 - k) * ldy);
    rows[static_cast<std::size_t>(k)] = wt_reversed.data() + (K - 1 - k) * ldy;
  }
  const blas::PackedMatrix from_rows = blas::PackedMatrix::from_transposed_rows(rows, N);
  CHECK(from_rows.n() == N);
  CHECK(from_rows.k() == K);
  got = y0;
  blas::gemm_packed(M, x.data(), ldx, from_rows, beta, got.data(), ldy);
  check_result(got, expected, y0, M, N, K, ldy);
  blas::PackedMatrix streamed = packed;  // the same panels, prefetched where W is over 512 KiB
  streamed.set_streamed(true);
  for (PackedKernel kernel : kernels_here()) {
    CAPTURE(static_cast<int>(kernel));
    got = y0;
    blas::detail::packed_product(M, x.data(), ldx, packed, beta, got.data(), ldy, kernel);
    check_result(got, expected, y0, M, N, K, ldy);
    got = y0;
    blas::detail::packed_product(M, x.data(), ldx, streamed, beta, got.data(), ldy, kernel);
    check_result(got, expected, y0, M, N, K, ldy);
  }
  // x given as its transpose x^T (K, M), rows M + pad apart (the padding never read: NaN)
  const std::int64_t ldxt = M + pad;
  std::vector<float> xt(static_cast<std::size_t>(std::max<std::int64_t>(K * ldxt, 1)),
                        std::numeric_limits<float>::quiet_NaN());
  for (std::int64_t i = 0; i < M; ++i)
    for (std::int64_t k = 0; k < K; ++k) xt[k * ldxt + i] = x[i * ldx + k];
  for (PackedKernel kernel : kernels_here()) {
    CAPTURE(static_cast<int>(kernel));
    got = y0;
    blas::detail::packed_product_xt(M, xt.data(), ldxt, packed, beta, got.data(), ldy, kernel);
    check_result(got, expected, y0, M, N, K, ldy);
  }
}


}  // namespace

TEST_CASE("gemm_packed: the same products as gemm on every row block, panel and stride edge") {
  Generator gen(41);
  for (const std::int64_t M : {1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 12, 13, 16, 17})
    for (const std::int64_t N : {1, 15, 16, 17, 32, 33, 48, 50})
      check_against_gemm(M, N, 7, 0, 0.0f, gen);
  for (const float beta : {0.0f, 1.0f, 0.5f, -2.0f})
    for (const std::int64_t pad : {0, 3}) {
      check_against_gemm(16, 1000, 64, pad, beta, gen);  // decoding's output projection, default sizes
      check_against_gemm(5, 37, 129, pad, beta, gen);
    }
  check_against_gemm(80, 256, 256, 1, 1.0f, gen);  // beam search's rows: 16 sentences x 5
  // W of 0.6 MB: streamed, the kernel prefetches; from 2 row blocks on (12 rows
  // for AVX2, 16 for AVX-512) it takes x in row blocks: whole ones, and a last
  // one of fewer rows
  for (const std::int64_t M : {1, 9, 12, 16, 17, 23, 64})
    check_against_gemm(M, 2100, 70, 1, 0.0f, gen);
  check_against_gemm(19, 2100, 70, 3, 0.5f, gen);
}

TEST_CASE("gemm_packed: runs the widest kernel the CPU has, the baseline runs everywhere") {
  CHECK(blas::detail::packed_kernel_runs(PackedKernel::Baseline));
  const PackedKernel chosen = blas::detail::packed_kernel();
  CHECK(blas::detail::packed_kernel_runs(chosen));
  if (blas::detail::packed_kernel_runs(PackedKernel::Avx512)) CHECK(chosen == PackedKernel::Avx512);
  MESSAGE("packed kernels on this CPU: " << kernels_here().size() << " (AVX-512, AVX2, baseline: those it runs)");
  for (PackedKernel k : {PackedKernel::Avx512, PackedKernel::Avx2}) {
    if (blas::detail::packed_kernel_runs(k)) continue;
    const std::vector<float> w(4, 1.0f), x(2, 1.0f);
    std::vector<float> y(2);
    const blas::PackedMatrix packed(w.data(), 2, 2, 2);
    CHECK_THROWS_WITH_AS(blas::detail::packed_product(1, x.data(), 2, packed, 0.0f, y.data(), 2, k),
                         "gemm_packed: this CPU cannot run the kernel asked for", Error);
  }
}

TEST_CASE("gemm_packed: hand-computed values") {
  // W (3, 2) = [[1, 2], [3, 4], [5, 6]], x (2, 2) = [[1, 0], [-1, 2]]:
  // x @ W^T = [[1, 3, 5], [3, 5, 7]]; with beta 2 and y = 1 everywhere, + 2.
  const std::vector<float> w = {1, 2, 3, 4, 5, 6}, x = {1, 0, -1, 2};
  const blas::PackedMatrix packed(w.data(), 3, 2, 2);
  std::vector<float> y(6, 1.0f);
  blas::gemm_packed(2, x.data(), 2, packed, 2.0f, y.data(), 3);
  CHECK(y == std::vector<float>{3, 5, 7, 5, 7, 9});
  // the first panel holds W's columns side by side: row kk is W[:, kk], then zeros
  CHECK(packed.panel(0)[0] == 1);
  CHECK(packed.panel(0)[1] == 3);
  CHECK(packed.panel(0)[2] == 5);
  CHECK(packed.panel(0)[3] == 0);
  CHECK(packed.panel(0)[16] == 2);
}

TEST_CASE("gemm_packed: empty products, and K = 0 scales y by beta") {
  const std::vector<float> none;
  const blas::PackedMatrix no_rows(none.data(), 0, 4, 4);
  CHECK(no_rows.empty());
  std::vector<float> y = {5, 6};
  blas::gemm_packed(1, y.data(), 4 /* unused: nothing to read */, no_rows, 0.0f, y.data(), 0);
  CHECK(y == std::vector<float>{5, 6});
  const std::vector<float> w(2 * 1);
  const blas::PackedMatrix no_depth(w.data(), 2, 0, 0);  // x @ W^T is zeros
  blas::gemm_packed(1, none.data(), 0, no_depth, 3.0f, y.data(), 2);
  CHECK(y == std::vector<float>{15, 18});
  blas::gemm_packed(0, none.data(), 0, no_depth, 0.0f, y.data(), 2);  // no rows: y untouched
  CHECK(y == std::vector<float>{15, 18});
}

TEST_CASE("gemm_packed: wrong sizes and strides are errors that say what is wrong") {
  const std::vector<float> w(12, 1.0f);
  CHECK_THROWS_WITH_AS(blas::PackedMatrix(w.data(), 3, 4, 3),
                       "PackedMatrix: the row stride 3 of W (3, 4) is below its 4 columns", Error);
  CHECK_THROWS_WITH_AS(blas::PackedMatrix(w.data(), -1, 4, 4), "PackedMatrix: sizes must be >= 0, got W (-1, 4)",
                       Error);
  CHECK_THROWS_WITH_AS(blas::PackedMatrix::from_transposed(w.data(), 4, 3, 3),
                       "PackedMatrix: the row stride 3 of W^T (3, 4) is below its 4 columns", Error);
  const std::vector<const float*> rows{w.data(), nullptr, w.data()};
  CHECK_THROWS_WITH_AS(blas::PackedMatrix::from_transposed_rows(rows, 4), "PackedMatrix: row 1 of W^T (3, 4) is null",
                       Error);
  CHECK_THROWS_WITH_AS(blas::PackedMatrix::from_transposed_rows(rows, -1),
                       "PackedMatrix: sizes must be >= 0, got W (-1, 3)", Error);
  const blas::PackedMatrix packed(w.data(), 3, 4, 4);
  std::vector<float> x(8), y(6);
  CHECK_THROWS_WITH_AS(blas::gemm_packed(2, x.data(), 3, packed, 0.0f, y.data(), 3),
                       "gemm_packed: the row stride 3 of x is below W's 4 columns", Error);
  CHECK_THROWS_WITH_AS(blas::gemm_packed(2, x.data(), 4, packed, 0.0f, y.data(), 2),
                       "gemm_packed: the row stride 2 of y is below W's 3 rows", Error);
  CHECK_THROWS_WITH_AS(blas::gemm_packed(-1, x.data(), 4, packed, 0.0f, y.data(), 3), "gemm_packed: -1 rows of x",
                       Error);
}

TEST_CASE("gemm_packed: counted by the timing as a packed (false, true, m, N, K) product") {
  Generator gen(5);
  const std::vector<float> w = random_values(20 * 8, gen), x = random_values(3 * 8, gen);
  std::vector<float> y(3 * 20);
  const blas::PackedMatrix packed(w.data(), 20, 8, 8);
  blas::set_gemm_timing(true);
  blas::gemm_packed(3, x.data(), 8, packed, 0.0f, y.data(), 20);
  blas::gemm_packed(3, x.data(), 8, packed, 0.0f, y.data(), 20);
  blas::set_gemm_timing(false);
  CHECK(blas::gemm_stats().calls == 2);
  CHECK(blas::gemm_stats().flops == doctest::Approx(2 * 2.0 * 3 * 20 * 8));
  const std::vector<blas::GemmShapeStats> shapes = blas::gemm_shape_stats();
  REQUIRE(shapes.size() == 1);
  CHECK(shapes[0].packed);
  CHECK(!shapes[0].trans_a);
  CHECK(shapes[0].trans_b);
  CHECK(shapes[0].m == 3);
  CHECK(shapes[0].n == 20);
  CHECK(shapes[0].k == 8);
  CHECK(shapes[0].calls == 2);
}

namespace {

// gemm_by_packing against OpenBLAS for one transposition: A is (m, k), or (k, m)
// when trans_a; B is (k, n), or (n, k) when trans_b; every stride `pad` wider
// than its rows, whose padding must come back untouched in C.
void check_by_packing(bool trans_a, bool trans_b, std::int64_t M, std::int64_t N, std::int64_t K, std::int64_t pad,
                      float beta, Generator& gen) {
  CAPTURE(trans_a);
  CAPTURE(trans_b);
  CAPTURE(M);
  CAPTURE(N);
  CAPTURE(K);
  CAPTURE(pad);
  CAPTURE(beta);
  const std::int64_t lda = (trans_a ? M : K) + pad, ldb = (trans_b ? K : N) + pad, ldc = N + pad;
  const std::int64_t a_rows = trans_a ? K : M, b_rows = trans_b ? N : K;
  const std::vector<float> a = random_values(static_cast<std::size_t>(std::max<std::int64_t>(a_rows * lda, 1)), gen);
  const std::vector<float> b = random_values(static_cast<std::size_t>(std::max<std::int64_t>(b_rows * ldb, 1)), gen);
  std::vector<float> c0 = random_values(static_cast<std::size_t>(std::max<std::int64_t>(M * ldc, 1)), gen);
  if (beta == 0.0f)  // beta 0 must not read C
    for (std::int64_t i = 0; i < M; ++i)
      for (std::int64_t j = 0; j < N; ++j) c0[i * ldc + j] = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> expected = c0;
  {
    const OpenBlasOnly oracle;
    blas::gemm(trans_a, trans_b, M, N, K, 1.0f, a.data(), lda, b.data(), ldb, beta, expected.data(), ldc);
  }
  for (PackedKernel kernel : kernels_here()) {
    CAPTURE(static_cast<int>(kernel));
    std::vector<float> got = c0;
    blas::detail::gemm_by_packing(trans_a, trans_b, M, N, K, a.data(), lda, b.data(), ldb, beta, got.data(), ldc,
                                  kernel);
    check_result(got, expected, c0, M, N, K, ldc);
  }
  // and blas::gemm itself, whichever code it picks here
  std::vector<float> got = c0;
  blas::gemm(trans_a, trans_b, M, N, K, 1.0f, a.data(), lda, b.data(), ldb, beta, got.data(), ldc);
  check_result(got, expected, c0, M, N, K, ldc);
}

}  // namespace

TEST_CASE("gemm_by_packing: the products of blas::gemm for every transposition, tail, stride and beta") {
  Generator gen(43);
  for (const bool trans_a : {false, true})
    for (const bool trans_b : {false, true}) {
      for (const std::int64_t M : {1, 5, 6, 7, 13})
        for (const std::int64_t N : {1, 16, 17, 33})
          for (const std::int64_t K : {1, 4, 9}) check_by_packing(trans_a, trans_b, M, N, K, 0, 0.0f, gen);
      for (const float beta : {0.0f, 1.0f, -0.5f})
        for (const std::int64_t pad : {0, 3}) {
          check_by_packing(trans_a, trans_b, 37, 70, 21, pad, beta, gen);  // several 16 x 16 transpose tiles, tails
          check_by_packing(trans_a, trans_b, 16, 64, 128, pad, beta, gen);  // S training's per-step products
        }
      // k past 384: trans_a transposes A into rows first, instead of reading its columns
      check_by_packing(trans_a, trans_b, 21, 40, 400, 1, 0.5f, gen);
    }
}

TEST_CASE("gemm_by_packing: wrong strides are errors that say what is wrong") {
  const std::vector<float> a(12, 1.0f), b(12, 1.0f);
  std::vector<float> c(12);
  const PackedKernel kernel = blas::detail::packed_kernel();
  CHECK_THROWS_WITH_AS(blas::detail::gemm_by_packing(true, false, 3, 2, 2, a.data(), 2, b.data(), 2, 0.0f, c.data(),
                                                     2, kernel),
                       "gemm_by_packing: the row stride 2 of A is below its 3 columns", Error);
  CHECK_THROWS_WITH_AS(blas::detail::gemm_by_packing(false, false, 3, 2, 2, a.data(), 2, b.data(), 2, 0.0f, c.data(),
                                                     1, kernel),
                       "gemm_by_packing: the row stride 1 of C is below its 2 columns", Error);
  CHECK_THROWS_WITH_AS(blas::detail::gemm_by_packing(false, true, 3, 2, 4, a.data(), 4, b.data(), 3, 0.0f, c.data(),
                                                     2, kernel),
                       "PackedMatrix: the row stride 3 of W (2, 4) is below its 4 columns", Error);
  CHECK_THROWS_WITH_AS(blas::detail::gemm_by_packing(false, false, -1, 2, 2, a.data(), 2, b.data(), 2, 0.0f,
                                                     c.data(), 2, kernel),
                       "gemm_by_packing: sizes must be >= 0, got m -1 n 2 k 2", Error);
}

TEST_CASE("blas::gemm hands float32 products with alpha 1 to the packed kernel only where that is the rule") {
  Generator gen(6);
  const std::vector<float> a = random_values(8 * 4, gen), b = random_values(8 * 5, gen);
  std::vector<float> c(4 * 5);
  const int threads = blas::num_threads();
  // The rule (blas.hpp): OpenBLAS's kernels are not AVX-512, one thread, and
  // the AVX-512 packed kernel runs (every product), or the AVX2 one is the
  // widest (small products with op(A) = A). Whether OpenBLAS's are AVX-512
  // depends on the machine and OPENBLAS_CORETYPE, so the test reads that part
  // from kernels_in_use().
  const std::string kernels = blas::kernels_in_use();
  bool openblas_avx512 = false;
  for (const char* name : {"SkylakeX ", "Cooperlake ", "SapphireRapids "})
    openblas_avx512 = openblas_avx512 || kernels.rfind(name, 0) == 0;
  const bool expected =
      blas::detail::packed_kernel() == PackedKernel::Avx512 && !openblas_avx512;
  MESSAGE("float32 products run on " << blas::float_products());
  // a^T (4, 8) @ b (8, 5), as dW = dy^T @ x
  auto counted_packed = [&](float alpha) {
    blas::set_gemm_timing(true);
    blas::gemm(true, false, 4, 5, 8, alpha, a.data(), 4, b.data(), 5, 0.0f, c.data(), 5);
    blas::set_gemm_timing(false);
    const std::vector<blas::GemmShapeStats> shapes = blas::gemm_shape_stats();
    REQUIRE(shapes.size() == 1);
    CHECK(shapes[0].trans_a);
    CHECK(!shapes[0].trans_b);
    return shapes[0].packed;
  };
  blas::set_num_threads(1);
  CHECK(blas::packed_routing_active() == expected);
  CHECK(counted_packed(1.0f) == expected);
  CHECK(!counted_packed(2.0f));  // alpha other than 1: OpenBLAS
  {
    const OpenBlasOnly off;
    CHECK(!blas::packed_routing_active());
    CHECK(!counted_packed(1.0f));
  }
  CHECK(blas::packed_routing_active() == expected);
  // OpenBLAS splits products over threads, the packed kernel does not: at 2
  // threads OpenBLAS keeps the products of over 2^25 multiply-adds; the AVX-512
  // kernel keeps those up to 2^25 (faster on one thread than OpenBLAS's kernels
  // on two), so 65^3, which OpenBLAS would split, is still its.
  blas::set_num_threads(2);
  CHECK(!blas::packed_routing_active());
  CHECK(counted_packed(1.0f) == expected);  // 4 x 5 x 8
  // C (n, n) = A @ B with A = 0.5 and B = 0.25 everywhere: whether it ran packed.
  auto square_packed = [](std::int64_t n) {
    const std::vector<float> sq_a(static_cast<std::size_t>(n * n), 0.5f), sq_b(sq_a.size(), 0.25f);
    std::vector<float> sq_c(sq_a.size());
    blas::set_gemm_timing(true);
    blas::gemm(false, false, n, n, n, 1.0f, sq_a.data(), n, sq_b.data(), n, 0.0f, sq_c.data(), n);
    blas::set_gemm_timing(false);
    REQUIRE(blas::gemm_shape_stats().size() == 1);
    CHECK(sq_c[0] == doctest::Approx(static_cast<double>(n) * 0.125));
    CHECK(sq_c.back() == doctest::Approx(static_cast<double>(n) * 0.125));
    return blas::gemm_shape_stats()[0].packed;
  };
  CHECK(square_packed(65) == expected);
  CHECK(square_packed(322) == expected);   // 33.4 M multiply-adds, just under 2^25
  CHECK(!square_packed(323));              // 33.7 M, just over
  blas::set_num_threads(threads);
}

TEST_CASE("blas::gemm hands small float32 products with op(A) = A to the AVX2 packed kernel, and no large ones") {
  const std::string kernels = blas::kernels_in_use();
  bool openblas_avx512 = false;
  for (const char* name : {"SkylakeX ", "Cooperlake ", "SapphireRapids "})
    openblas_avx512 = openblas_avx512 || kernels.rfind(name, 0) == 0;
  const bool avx512 = blas::detail::packed_kernel() == PackedKernel::Avx512 && !openblas_avx512;
  const bool avx2 = blas::detail::packed_kernel() == PackedKernel::Avx2 && !openblas_avx512;
  const int threads = blas::num_threads();
  blas::set_num_threads(1);
  // C (m, n) = A (m, k) @ B^T, B (n, k): which code ran it, and C checked against a triple loop.
  auto ran_packed = [](std::int64_t m, std::int64_t n, std::int64_t k, bool trans_b) {
    Generator gen(static_cast<std::uint64_t>(m + n + k));
    const std::vector<float> a = random_values(static_cast<std::size_t>(m * k), gen),
                             b = random_values(static_cast<std::size_t>(n * k), gen);
    std::vector<float> c(static_cast<std::size_t>(m * n));
    blas::set_gemm_timing(true);
    blas::gemm(false, trans_b, m, n, k, 1.0f, a.data(), k, b.data(), trans_b ? k : n, 0.0f, c.data(), n);
    blas::set_gemm_timing(false);
    const std::vector<blas::GemmShapeStats> shapes = blas::gemm_shape_stats();
    REQUIRE(shapes.size() == 1);
    for (std::int64_t i = 0; i < m; i += 7)
      for (std::int64_t j = 0; j < n; j += 5) {
        double want = 0;
        for (std::int64_t kk = 0; kk < k; ++kk)
          want += static_cast<double>(a[i * k + kk]) * (trans_b ? b[j * k + kk] : b[kk * n + j]);
        CHECK(c[i * n + j] == doctest::Approx(want).epsilon(1e-4));
      }
    return shapes[0].packed;
  };
  CHECK(blas::packed_routing_small() == (avx512 || avx2));
  CHECK(ran_packed(16, 64, 128, true) == (avx512 || avx2));    // S training: attention, per step
  CHECK(ran_packed(64, 256, 512, true) == (avx512 || avx2));   // M decoding: the combine layer, the largest taken
  CHECK(ran_packed(64, 256, 512, false) == (avx512 || avx2));  // NN too
  CHECK(ran_packed(64, 257, 512, true) == avx512);             // one column more: OpenBLAS at AVX2
  blas::set_num_threads(threads);
}
