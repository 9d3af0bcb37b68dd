// core/kernels/blas: the one door to OpenBLAS. Its GEMM held to the triple loop for every
// transposition, row strides wider than the rows, both dtypes and beta; the empty
// products; and the timing counts `attend bench` prints (totals and per shape).
#include <doctest/doctest.h>

#include <array>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "core/kernels/blas.hpp"
#include "core/random.hpp"

using namespace attend;

namespace {

// C = alpha * op(A) @ op(B) + beta * C, the definition, in double.
template <class T>
void naive_gemm(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, T alpha, const std::vector<T>& a,
                std::int64_t lda, const std::vector<T>& b, std::int64_t ldb, T beta, std::vector<T>& c,
                std::int64_t ldc) {
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      double sum = 0;
      for (std::int64_t p = 0; p < k; ++p) {
        const double x = ta ? a[p * lda + i] : a[i * lda + p];
        const double y = tb ? b[j * ldb + p] : b[p * ldb + j];
        sum += x * y;
      }
      c[i * ldc + j] = static_cast<T>(alpha * sum + (beta == T(0) ? 0.0 : beta * c[i * ldc + j]));
    }
}

template <class T>
std::vector<T> random_values(std::size_t n, Generator& gen) {
  std::vector<T> v(n);
  for (T& x : v) x = static_cast<T>(gen.uniform(-1, 1));
  return v;
}

template <class T>
void check_against_naive(double tolerance) {
  Generator gen(7);
  for (const bool ta : {false, true})
    for (const bool tb : {false, true})
      for (const auto& [m, n, k] : {std::array<std::int64_t, 3>{1, 1, 1}, {3, 5, 4}, {16, 33, 7}, {2, 64, 129}}) {
        // Row strides 3 wider than the stored rows: only the first columns are the matrix.
        const std::int64_t a_rows = ta ? k : m, a_cols = ta ? m : k, lda = a_cols + 3;
        const std::int64_t b_rows = tb ? n : k, b_cols = tb ? k : n, ldb = b_cols + 3;
        const std::int64_t ldc = n + 3;
        const auto a = random_values<T>(static_cast<std::size_t>(a_rows * lda), gen);
        const auto b = random_values<T>(static_cast<std::size_t>(b_rows * ldb), gen);
        // alpha 1: float32 products that blas::gemm may hand to the packed kernel (blas.hpp)
        for (const T alpha : {T(1.5), T(1)})
        for (const T beta : {T(0), T(1), T(-0.5)}) {
          std::vector<T> c = random_values<T>(static_cast<std::size_t>(m * ldc), gen);
          std::vector<T> expected = c;
          blas::gemm(ta, tb, m, n, k, alpha, a.data(), lda, b.data(), ldb, beta, c.data(), ldc);
          naive_gemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, expected, ldc);
          CAPTURE(alpha);
          CAPTURE(ta);
          CAPTURE(tb);
          CAPTURE(m);
          CAPTURE(n);
          CAPTURE(k);
          CAPTURE(beta);
          for (std::size_t i = 0; i < c.size(); ++i) CHECK(c[i] == doctest::Approx(expected[i]).epsilon(tolerance));
        }
      }
}

}  // namespace

TEST_CASE("gemm matches the triple loop for every transposition, stride and beta") {
  SUBCASE("float32") { check_against_naive<float>(1e-5); }
  SUBCASE("float64") { check_against_naive<double>(1e-12); }
}

TEST_CASE("gemm with k = 0 still applies beta, and m = 0 or n = 0 touches nothing") {
  std::vector<float> c{1, 2, 3, 4};
  const float none = 0;
  blas::gemm(false, false, 2, 2, 0, 1.0f, &none, 1, &none, 2, 0.5f, c.data(), 2);
  CHECK(c == std::vector<float>{0.5f, 1, 1.5f, 2});
  // beta = 0 writes zeros, even over NaN, as BLAS does.
  std::vector<double> d{std::numeric_limits<double>::quiet_NaN(), 1};
  const double none_d = 0;
  blas::gemm(false, false, 1, 2, 0, 1.0, &none_d, 1, &none_d, 2, 0.0, d.data(), 2);
  CHECK(d == std::vector<double>{0, 0});
  blas::gemm(false, false, 0, 2, 3, 1.0f, &none, 3, &none, 2, 0.0f, c.data(), 2);
  CHECK(c == std::vector<float>{0.5f, 1, 1.5f, 2});
}

TEST_CASE("gemm timing counts calls and FLOPs, in total and per shape, only while it is on") {
  Generator gen(3);
  const auto a = random_values<float>(64 * 32, gen);
  const auto b = random_values<float>(32 * 16, gen);
  std::vector<float> c(64 * 16);
  blas::gemm(false, false, 64, 16, 32, 1.0f, a.data(), 32, b.data(), 16, 0.0f, c.data(), 16);  // not counted

  blas::set_gemm_timing(true);
  for (int i = 0; i < 3; ++i) blas::gemm(false, false, 64, 16, 32, 1.0f, a.data(), 32, b.data(), 16, 0.0f, c.data(), 16);
  std::vector<float> d(32 * 16);
  blas::gemm(true, false, 32, 16, 64, 1.0f, a.data(), 32, c.data(), 16, 0.0f, d.data(), 16);  // A^T (32, 64) @ C
  blas::set_gemm_timing(false);
  blas::gemm(false, false, 64, 16, 32, 1.0f, a.data(), 32, b.data(), 16, 0.0f, c.data(), 16);  // not counted either

  const blas::GemmStats total = blas::gemm_stats();  // still readable after timing stops
  CHECK(total.calls == 4);
  CHECK(total.flops == doctest::Approx(4 * 2.0 * 64 * 16 * 32));
  CHECK(total.seconds > 0);
  const std::vector<blas::GemmShapeStats> shapes = blas::gemm_shape_stats();
  REQUIRE(shapes.size() == 2);
  std::int64_t calls = 0;
  double seconds = 0;
  for (const blas::GemmShapeStats& s : shapes) {
    calls += s.calls;
    seconds += s.seconds;
    if (s.trans_a) {
      CHECK((s.m == 32 && s.n == 16 && s.k == 64 && !s.trans_b && s.calls == 1));
    } else {
      CHECK((s.m == 64 && s.n == 16 && s.k == 32 && !s.trans_b && s.calls == 3));
    }
  }
  CHECK(calls == total.calls);
  CHECK(seconds == doctest::Approx(total.seconds));
  CHECK(shapes[0].seconds >= shapes[1].seconds);  // the most time first

  blas::set_gemm_timing(true);  // starting again starts from zero
  CHECK(blas::gemm_stats().calls == 0);
  CHECK(blas::gemm_shape_stats().empty());
  blas::set_gemm_timing(false);
}

TEST_CASE("describe_kernels says which kernels run, who chose them, and when the CPU could run wider ones") {
  const std::string dynamic = "OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH NO_AFFINITY Haswell MAX_THREADS=64";
  const blas::CpuVectors avx512{true}, avx2{false};
  // OpenBLAS's own choice on a CPU it knows: nothing to add.
  CHECK(blas::describe_kernels("Cooperlake", dynamic, nullptr, avx512) == "Cooperlake (OpenBLAS's own choice)");
  CHECK(blas::describe_kernels("Haswell", dynamic, nullptr, avx2) == "Haswell (OpenBLAS's own choice)");
  // The variable is reported as the user's choice, and never second-guessed on a CPU without AVX-512.
  CHECK(blas::describe_kernels("Haswell", dynamic, "Haswell", avx2) == "Haswell (OPENBLAS_CORETYPE=Haswell)");
  CHECK(blas::describe_kernels("SkylakeX", dynamic, "SkylakeX", avx512) == "SkylakeX (OPENBLAS_CORETYPE=SkylakeX)");
  // AVX2 kernels on an AVX-512 CPU: the report says how to get the wider ones.
  const std::string forced = blas::describe_kernels("Haswell", dynamic, "Haswell", avx512);
  CHECK(forced.rfind("Haswell (OPENBLAS_CORETYPE=Haswell; this CPU also runs OpenBLAS's AVX-512 kernels", 0) == 0);
  CHECK(forced.find("unset OPENBLAS_CORETYPE") != std::string::npos);
  const std::string unknown = blas::describe_kernels("Haswell", dynamic, nullptr, avx512);
  CHECK(unknown.find("OPENBLAS_CORETYPE=SkylakeX") != std::string::npos);
  // A single-target build holds no other kernels: no advice it could not follow.
  CHECK(blas::describe_kernels("Haswell", "OpenBLAS 0.3.21 NO_AFFINITY HASWELL MAX_THREADS=64", nullptr, avx512) ==
        "Haswell (OpenBLAS's own choice)");
  // This process: the kernels OpenBLAS reports, then its configuration.
  const std::string here = blas::kernels_in_use();
  CHECK(here.find(" (") != std::string::npos);
  CHECK(here.find("): OpenBLAS ") != std::string::npos);
}
