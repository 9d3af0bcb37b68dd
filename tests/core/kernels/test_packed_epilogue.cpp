// core/kernels/packed_gemm's epilogue: the bias the kernel adds, and the row summaries
// (blas::RowSummary) it gathers for decoding, held for every kernel this CPU
// runs to the simple version: the product by OpenBLAS plus the bias, then one
// pass over each row for its maximum, the sum of e^(z - max) in double, and the
// first best column but `skip`. Edges: rows and columns that fill no block or
// panel, ties within a lane and across lanes, skip on the best column, NaN,
// rows of -inf, and empty products. The same for blas::summarise_rows, the
// summaries from W unpacked (core/kernels/detail/summary_kernel.hpp), wherever beta is 0.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "core/kernels/blas.hpp"
#include "core/error.hpp"
#include "core/kernels/detail/packed_gemm_detail.hpp"
#include "core/kernels/packed_gemm.hpp"
#include "core/random.hpp"
#include "tests/support/row_summary.hpp"

using namespace attend;
using attend::testing::check_summary;
using attend::testing::summary_of;
using blas::detail::PackedKernel;

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

std::vector<float> random_values(std::size_t n, Generator& gen) {
  std::vector<float> v(n);
  for (float& x : v) x = static_cast<float>(gen.uniform(-1, 1));
  return v;
}

std::vector<PackedKernel> kernels_here() {
  std::vector<PackedKernel> out;
  for (PackedKernel k : {PackedKernel::Avx512, PackedKernel::Avx2, PackedKernel::Baseline})
    if (blas::detail::packed_kernel_runs(k)) out.push_back(k);
  return out;
}

// y = x @ W^T + bias + beta * y0 with summaries, by every kernel, against the
// oracle; the stride's padding untouched. bias and x may hold NaN or -inf.
void check_epilogue(std::int64_t M, std::int64_t N, std::int64_t K, float beta, std::int64_t skip,
                    const std::vector<float>& x, const std::vector<float>& w, const std::vector<float>& bias,
                    Generator& gen) {
  CAPTURE(M);
  CAPTURE(N);
  CAPTURE(K);
  CAPTURE(beta);
  CAPTURE(skip);
  const std::int64_t ldy = N + 2;
  const std::vector<float> y0 = random_values(static_cast<std::size_t>(std::max<std::int64_t>(M * ldy, 1)), gen);
  std::vector<float> expected = y0;
  blas::gemm(false, true, M, N, K, 1.0f, x.data(), K, w.data(), K, 0.0f, expected.data(), ldy);
  for (std::int64_t i = 0; i < M; ++i)
    for (std::int64_t j = 0; j < N; ++j) {
      float& e = expected[static_cast<std::size_t>(i * ldy + j)];
      e = e + bias[static_cast<std::size_t>(j)] + beta * y0[static_cast<std::size_t>(i * ldy + j)];
    }
  const blas::PackedMatrix packed(w.data(), N, K, K);
  blas::PackedMatrix streamed = packed;  // the same panels, prefetched where W is large
  streamed.set_streamed(true);
  for (PackedKernel kernel : kernels_here())
    for (const blas::PackedMatrix* matrix : {&packed, static_cast<const blas::PackedMatrix*>(&streamed)}) {
      CAPTURE(static_cast<int>(kernel));
      CAPTURE(matrix->streamed());
      std::vector<float> got = y0;
      std::vector<blas::RowSummary> rows(static_cast<std::size_t>(M));
      blas::detail::packed_product(M, x.data(), K, *matrix, beta, got.data(), ldy, kernel, {bias.data(), rows.data(), skip});
      for (std::int64_t i = 0; i < M; ++i) {
        CAPTURE(i);
        for (std::int64_t j = 0; j < ldy; ++j) {
          const auto at = static_cast<std::size_t>(i * ldy + j);
          if (j >= N) {
            REQUIRE(got[at] == y0[at]);
          } else if (std::isfinite(expected[at])) {
            REQUIRE(std::fabs(got[at] - expected[at]) <= 1e-5f * static_cast<float>(K + 4));
          } else {
            REQUIRE((std::isnan(expected[at]) ? std::isnan(got[at]) : got[at] == expected[at]));
          }
        }
        check_summary(rows[static_cast<std::size_t>(i)], summary_of(got.data() + i * ldy, N, skip));
      }
      if (beta != 0.0f) continue;
      // The summaries alone (store_y false): y untouched, the summaries as with y stored.
      std::vector<float> untouched = y0;
      std::vector<blas::RowSummary> alone(static_cast<std::size_t>(M));
      blas::detail::packed_product(M, x.data(), K, *matrix, 0.0f, untouched.data(), ldy, kernel,
                                   {bias.data(), alone.data(), skip, false});
      REQUIRE(untouched == y0);
      for (std::int64_t i = 0; i < M; ++i) {
        CAPTURE(i);
        const blas::RowSummary &a = alone[static_cast<std::size_t>(i)], &r = rows[static_cast<std::size_t>(i)];
        CHECK(a.best == r.best);
        CHECK(a.best_value == r.best_value);
        CHECK((a.max == r.max || (std::isnan(a.max) && std::isnan(r.max))));
        CHECK((a.exp_sum == r.exp_sum || (std::isnan(a.exp_sum) && std::isnan(r.exp_sum))));
      }
      if (matrix != &packed) continue;
      // The same summaries turned around (summarise_rows, W as it is): the logits
      // are the kernel's bit for bit, so the oracle's pass over them is exact.
      std::vector<blas::RowSummary> turned(static_cast<std::size_t>(M));
      blas::detail::summarise_rows(M, x.data(), K, w.data(), N, K, K, bias.data(), skip, turned.data(), kernel);
      // Without the sums: the same maximum and best, -inf, NaN and all; no sum.
      std::vector<blas::RowSummary> best_only(static_cast<std::size_t>(M));
      blas::detail::summarise_rows(M, x.data(), K, w.data(), N, K, K, bias.data(), skip, best_only.data(), kernel,
                                   blas::SummaryParts::MaxAndBest);
      for (std::int64_t i = 0; i < M; ++i) {
        CAPTURE(i);
        const blas::RowSummary &t = turned[static_cast<std::size_t>(i)], &b = best_only[static_cast<std::size_t>(i)];
        check_summary(t, summary_of(got.data() + i * ldy, N, skip));
        CHECK(b.best == t.best);
        CHECK((b.best_value == t.best_value || (std::isnan(b.best_value) && std::isnan(t.best_value))));
        CHECK((b.max == t.max || (std::isnan(b.max) && std::isnan(t.max))));
        CHECK(std::isnan(b.exp_sum));
      }
    }
}

void check_random(std::int64_t M, std::int64_t N, std::int64_t K, float beta, std::int64_t skip, Generator& gen) {
  const std::vector<float> x = random_values(static_cast<std::size_t>(M * K), gen);
  const std::vector<float> w = random_values(static_cast<std::size_t>(N * K), gen);
  const std::vector<float> bias = random_values(static_cast<std::size_t>(N), gen);
  check_epilogue(M, N, K, beta, skip, x, w, bias, gen);
}

}  // namespace

TEST_CASE("packed epilogue: bias and row summaries on every row block, panel and lane edge") {
  Generator gen(7);
  for (const std::int64_t M : {1, 2, 5, 6, 7, 8, 9, 13, 17})
    for (const std::int64_t N : {1, 3, 15, 16, 17, 31, 32, 33, 100})
      for (const std::int64_t skip : {std::int64_t{-1}, std::int64_t{0}, N - 1, N / 2})
        check_random(M, N, 9, 0.0f, skip, gen);
  for (const float beta : {0.0f, 1.0f, -0.5f}) check_random(16, 1000, 64, beta, 3, gen);  // decoding's sizes
  check_random(64, 8000, 32, 0.0f, 3, gen);  // an 8,000-token row: W over the prefetch size
  for (const std::int64_t M : {17, 23})         // x in row blocks, the last one short (packed_gemm.cpp)
    check_random(M, 2100, 70, 0.0f, 2099, gen);  // W of 0.6 MB
}

TEST_CASE("packed epilogue: skip on the best column gives the next best, ties go to the first column") {
  Generator gen(8);
  const std::int64_t M = 3, N = 50, K = 5;
  const std::vector<float> x = random_values(static_cast<std::size_t>(M * K), gen);
  // Columns 5, 21 (the same lane, the next panel) and 38 (another lane) share one
  // row of W and one bias, far above the rest: the best value, three times.
  std::vector<float> w = random_values(static_cast<std::size_t>(N * K), gen);
  std::vector<float> bias(static_cast<std::size_t>(N), 0.0f);
  for (const std::int64_t j : {5, 21, 38}) {
    std::copy(w.begin(), w.begin() + K, w.begin() + j * K);
    bias[static_cast<std::size_t>(j)] = 100.0f;
  }
  for (const std::int64_t skip : {-1, 5, 21, 38, 0}) check_epilogue(M, N, K, 0.0f, skip, x, w, bias, gen);
  const blas::PackedMatrix packed(w.data(), N, K, K);
  std::vector<float> y(static_cast<std::size_t>(M * N));
  std::vector<blas::RowSummary> rows(M);
  blas::gemm_packed(M, x.data(), K, packed, 0.0f, y.data(), N, {bias.data(), rows.data(), -1});
  CHECK(rows[0].best == 5);
  blas::gemm_packed(M, x.data(), K, packed, 0.0f, y.data(), N, {bias.data(), rows.data(), 5});
  CHECK(rows[0].best == 21);
  CHECK(rows[0].max == y[5]);  // the maximum counts the skipped column
}

TEST_CASE("packed epilogue: hand-computed values") {
  // W (3, 2) = [[1, 0], [0, 1], [1, 1]], x = [1, 2]: x @ W^T = [1, 2, 3]; bias [2, 1, 0] gives [3, 3, 3].
  const std::vector<float> w = {1, 0, 0, 1, 1, 1}, x = {1, 2}, bias = {2, 1, 0};
  const blas::PackedMatrix packed(w.data(), 3, 2, 2);
  std::vector<float> y(3);
  blas::RowSummary row;
  blas::gemm_packed(1, x.data(), 2, packed, 0.0f, y.data(), 3, {bias.data(), &row, -1});
  CHECK(y == std::vector<float>{3, 3, 3});
  CHECK(row.max == 3);
  CHECK(row.exp_sum == doctest::Approx(3.0).epsilon(1e-6));  // e^0 three times
  CHECK(row.best == 0);
  blas::gemm_packed(1, x.data(), 2, packed, 0.0f, y.data(), 3, {bias.data(), &row, 0});
  CHECK(row.best == 1);
  // Without a bias: [1, 2, 3], max 3, sum e^-2 + e^-1 + 1, best 2.
  blas::gemm_packed(1, x.data(), 2, packed, 0.0f, y.data(), 3, {nullptr, &row, -1});
  CHECK(y == std::vector<float>{1, 2, 3});
  CHECK(row.exp_sum == doctest::Approx(std::exp(-2.0) + std::exp(-1.0) + 1.0).epsilon(1e-6));
  CHECK(row.best == 2);
}

TEST_CASE("packed epilogue: NaN and -inf logits are summarised as the oracle does them") {
  Generator gen(9);
  const std::int64_t M = 4, N = 40, K = 6;
  std::vector<float> x = random_values(static_cast<std::size_t>(M * K), gen);
  const std::vector<float> w = random_values(static_cast<std::size_t>(N * K), gen);
  std::vector<float> bias = random_values(static_cast<std::size_t>(N), gen);
  bias[7] = std::numeric_limits<float>::quiet_NaN();  // one NaN column: the sum is NaN, max and best pass it over
  bias[30] = -kInf;
  check_epilogue(M, N, K, 0.0f, -1, x, w, bias, gen);
  x[K + 2] = std::numeric_limits<float>::quiet_NaN();  // row 1 all NaN: no maximum, no best
  check_epilogue(M, N, K, 0.0f, 3, x, w, bias, gen);
  std::vector<float> y(static_cast<std::size_t>(M * N));
  std::vector<blas::RowSummary> rows(M);
  const blas::PackedMatrix packed(w.data(), N, K, K);
  blas::gemm_packed(M, x.data(), K, packed, 0.0f, y.data(), N, {bias.data(), rows.data(), -1});
  CHECK(std::isnan(rows[0].exp_sum));
  CHECK(rows[1].best == -1);
  CHECK(rows[1].max == -kInf);
  // Every column -inf: no best, maximum -inf, nothing summed.
  const std::vector<float> minus_inf(static_cast<std::size_t>(N), -kInf);
  blas::gemm_packed(1, x.data(), K, packed, 0.0f, y.data(), N, {minus_inf.data(), rows.data(), -1});
  CHECK(rows[0].best == -1);
  CHECK(rows[0].max == -kInf);
}

TEST_CASE("packed epilogue: a maximum that climbs far along the row, -inf, then NaN, in a lane before its first value") {
  // The sum is kept relative to a reference that moves only when a lane's
  // maximum passes it by 32: here it moves several times in one row, by more
  // than float's e^x could take at once (e^200 overflows), and the sum must
  // still be the oracle's.
  Generator gen(12);
  const std::int64_t M = 9, N = 300, K = 5;
  const std::vector<float> x = random_values(static_cast<std::size_t>(M * K), gen);
  const std::vector<float> w = random_values(static_cast<std::size_t>(N * K), gen);
  std::vector<float> bias = random_values(static_cast<std::size_t>(N), gen);
  bias[70] = 40.0f;
  bias[133] = 95.0f;  // 55 above the last, in another lane
  bias[150] = 160.0f;
  bias[291] = 250.0f;  // in the last panel, past which the row ends
  bias[5] = -120.0f;   // a first value far below the later maximum
  check_epilogue(M, N, K, 0.0f, -1, x, w, bias, gen);
  check_epilogue(M, N, K, 0.5f, 150, x, w, bias, gen);
  // Columns 0 .. 31 at -inf: lanes see -inf before any value; then one of them NaN.
  for (std::int64_t j = 0; j < 32; ++j) bias[static_cast<std::size_t>(j)] = -kInf;
  check_epilogue(M, N, K, 0.0f, -1, x, w, bias, gen);
  bias[19] = std::numeric_limits<float>::quiet_NaN();  // the sum is NaN, whatever comes after it
  check_epilogue(M, N, K, 0.0f, -1, x, w, bias, gen);
  std::vector<float> y(static_cast<std::size_t>(M * N));
  std::vector<blas::RowSummary> rows(M);
  const blas::PackedMatrix packed(w.data(), N, K, K);
  blas::gemm_packed(M, x.data(), K, packed, 0.0f, y.data(), N, {bias.data(), rows.data(), -1});
  for (const blas::RowSummary& row : rows) CHECK(std::isnan(row.exp_sum));
}

TEST_CASE("packed epilogue: empty products leave empty summaries") {
  const std::vector<float> none;
  const blas::PackedMatrix no_columns(none.data(), 0, 4, 4);
  std::vector<blas::RowSummary> rows(2);
  rows[0].best = 7;
  std::vector<float> x(8), y(2);
  blas::gemm_packed(2, x.data(), 4, no_columns, 0.0f, y.data(), 0, {nullptr, rows.data(), -1});
  CHECK(rows[0].best == -1);
  CHECK(rows[0].max == -kInf);
  CHECK(rows[0].exp_sum == 0);
}

TEST_CASE("packed epilogue: the summaries alone need summaries and beta 0") {
  const std::vector<float> w(32 * 4, 0.5f), x(3 * 4, 1.0f);
  const blas::PackedMatrix packed(w.data(), 32, 4, 4);
  std::vector<float> y(3 * 32, 2.0f);
  std::vector<blas::RowSummary> rows(3);
  CHECK_THROWS_WITH_AS(blas::gemm_packed(3, x.data(), 4, packed, 1.0f, y.data(), 32, {nullptr, rows.data(), -1, false}),
                       doctest::Contains("beta 0"), Error);
  CHECK_THROWS_WITH_AS(blas::gemm_packed(3, x.data(), 4, packed, 0.0f, y.data(), 32, {nullptr, nullptr, -1, false}),
                       doctest::Contains("no summaries"), Error);
  CHECK_THROWS_AS(blas::gemm_packed(0, x.data(), 4, packed, 0.0f, y.data(), 32, {nullptr, nullptr, -1, false}), Error);
  blas::gemm_packed(3, x.data(), 4, packed, 0.0f, y.data(), 32, {nullptr, rows.data(), -1, false});
  for (const float v : y) CHECK(v == 2.0f);
  CHECK(rows[0].max == 2.0f);  // 4 * 0.5 * 1
  CHECK(rows[0].best == 0);
  CHECK(rows[2].exp_sum == doctest::Approx(32.0));
}

TEST_CASE("summarise_rows: x in groups of panels and panels left over, strided x and W, against the packed product's logits") {
  Generator gen(13);
  for (const std::int64_t M : {31, 33, 48, 64, 70, 81})  // 2 to 6 panels of x: grouped by 4 (AVX-512) and left over
    for (const std::int64_t N : {1, 5, 8, 9, 100, 301})  // blocks of 2 to 8 columns, and the last one short
      for (const std::int64_t skip : {std::int64_t{-1}, N - 1}) {
        CAPTURE(M);
        CAPTURE(N);
        CAPTURE(skip);
        const std::int64_t K = 11, ldx = K + 3, ldw = K + 5;
        const std::vector<float> x = random_values(static_cast<std::size_t>(M * ldx), gen);
        const std::vector<float> w = random_values(static_cast<std::size_t>(N * ldw), gen);
        std::vector<float> bias = random_values(static_cast<std::size_t>(N), gen);
        bias[static_cast<std::size_t>(N / 2)] += 60.0f;  // the reference moves in mid-row
        std::vector<float> y(static_cast<std::size_t>(M * N));
        const blas::PackedMatrix packed(w.data(), N, K, ldw);
        for (PackedKernel kernel : kernels_here()) {
          CAPTURE(static_cast<int>(kernel));
          blas::detail::packed_product(M, x.data(), ldx, packed, 0.0f, y.data(), N, kernel, {bias.data(), nullptr, -1});
          std::vector<blas::RowSummary> rows(static_cast<std::size_t>(M));
          blas::detail::summarise_rows(M, x.data(), ldx, w.data(), N, K, ldw, bias.data(), skip, rows.data(), kernel);
          std::vector<blas::RowSummary> best_only(static_cast<std::size_t>(M));
          blas::detail::summarise_rows(M, x.data(), ldx, w.data(), N, K, ldw, bias.data(), skip, best_only.data(),
                                       kernel, blas::SummaryParts::MaxAndBest);
          for (std::int64_t i = 0; i < M; ++i) {
            CAPTURE(i);
            const blas::RowSummary want = summary_of(y.data() + i * N, N, skip), &b = best_only[static_cast<std::size_t>(i)];
            check_summary(rows[static_cast<std::size_t>(i)], want);
            CHECK(b.max == want.max);
            CHECK(b.best == want.best);
            CHECK(b.best_value == want.best_value);
            CHECK(std::isnan(b.exp_sum));
          }
        }
      }
}

TEST_CASE("summarise_rows: hand-computed values, empty products and bad strides") {
  // As the epilogue's hand-computed case: x @ W^T + bias = [3, 3, 3].
  const std::vector<float> w = {1, 0, 0, 1, 1, 1}, x = {1, 2}, bias = {2, 1, 0};
  blas::RowSummary row;
  blas::summarise_rows(1, x.data(), 2, w.data(), 3, 2, 2, bias.data(), -1, &row);
  CHECK(row.max == 3);
  CHECK(row.exp_sum == doctest::Approx(3.0).epsilon(1e-6));
  CHECK(row.best == 0);
  blas::summarise_rows(1, x.data(), 2, w.data(), 3, 2, 2, nullptr, -1, &row);  // [1, 2, 3]
  CHECK(row.best == 2);
  CHECK(row.best_value == 3);
  CHECK(row.exp_sum == doctest::Approx(std::exp(-2.0) + std::exp(-1.0) + 1.0).epsilon(1e-6));
  blas::summarise_rows(1, x.data(), 2, w.data(), 3, 2, 2, nullptr, 2, &row, blas::SummaryParts::MaxAndBest);
  CHECK(row.max == 3);
  CHECK(row.best == 1);  // column 2 skipped
  CHECK(row.best_value == 2);
  CHECK(std::isnan(row.exp_sum));
  std::vector<blas::RowSummary> rows(2);
  rows[0].best = 7;
  blas::summarise_rows(2, x.data(), 2, w.data(), 0, 2, 2, nullptr, -1, rows.data());  // no columns
  CHECK(rows[0].best == -1);
  CHECK(rows[0].max == -kInf);
  CHECK(rows[0].exp_sum == 0);
  blas::summarise_rows(2, x.data(), 2, w.data(), 0, 2, 2, nullptr, -1, rows.data(), blas::SummaryParts::MaxAndBest);
  CHECK(rows[1].best == -1);
  CHECK(std::isnan(rows[1].exp_sum));  // not asked for, even of no columns
  CHECK_THROWS_WITH_AS(blas::summarise_rows(1, x.data(), 1, w.data(), 3, 2, 2, nullptr, -1, &row),
                       doctest::Contains("row stride 1 of x"), Error);
  CHECK_THROWS_WITH_AS(blas::summarise_rows(1, x.data(), 2, w.data(), 3, 2, 1, nullptr, -1, &row),
                       doctest::Contains("row stride 1 of W"), Error);
  CHECK_THROWS_AS(blas::summarise_rows(-1, x.data(), 2, w.data(), 3, 2, 2, nullptr, -1, &row), Error);
  CHECK_THROWS_WITH_AS(blas::summarise_rows(1, x.data(), 2, w.data(), 3, 2, 2, nullptr, -1, nullptr),
                       doctest::Contains("no summaries"), Error);
}
