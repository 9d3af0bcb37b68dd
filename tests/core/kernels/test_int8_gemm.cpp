// core/kernels/int8_gemm: blas::quantize_rows by hand, and the int8 product
// (gemm_packed with PackedMatrix::from_int8) held on every path this CPU runs
// (detail::int8_product) to a plain scalar oracle, bit for bit: x quantized
// per row, integer dots, then (s_i * scale_n) * dot + bias + beta * y. Then
// its distance from the float product against the bound int8_gemm.hpp states,
// the epilogue (summaries from the stored y, skip, beta, store_y false, no
// bias), zero rows, a NaN row, and the refusals.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/kernels/blas.hpp"
#include "core/kernels/detail/int8_gemm_detail.hpp"
#include "core/kernels/detail/packed_gemm_detail.hpp"
#include "core/kernels/int8_gemm.hpp"
#include "core/kernels/packed_gemm.hpp"
#include "core/random.hpp"
#include "tests/support/row_summary.hpp"

using namespace attend;
using attend::testing::check_summary;
using attend::testing::summary_of;
using blas::detail::Int8Kernel;

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

std::vector<float> random_values(std::int64_t n, Generator& gen) {
  std::vector<float> v(static_cast<std::size_t>(n));
  for (float& x : v) x = static_cast<float>(gen.uniform(-1, 1));
  return v;
}

// The paths this CPU runs; a MESSAGE names each one it lacks (once per program).
std::vector<Int8Kernel> paths_here() {
  static bool said = false;
  std::vector<Int8Kernel> out;
  for (Int8Kernel k : {Int8Kernel::Vnni, Int8Kernel::Avx2, Int8Kernel::Portable}) {
    if (blas::detail::int8_kernel_runs(k)) {
      out.push_back(k);
    } else if (!said) {
      MESSAGE("int8 path " << blas::detail::int8_kernel_name(k) << " skipped: this CPU lacks it");
    }
  }
  said = true;
  return out;
}

// The oracle: y (m, n) as int8_gemm.hpp defines it, one value at a time.
struct Case {
  std::int64_t m, n, k, ldx, ldy;
  std::vector<float> x;       // (m, ldx)
  blas::QuantizedRows w;      // (n, k)
  std::vector<float> bias;    // (n), or empty for none
  float beta = 0.0f;
  std::vector<float> y0;      // (m, ldy): y before the product
};

std::vector<float> oracle(const Case& c) {
  std::vector<float> y = c.y0;
  for (std::int64_t i = 0; i < c.m; ++i) {
    const float* row = c.x.data() + i * c.ldx;
    float amax = 0.0f;
    bool finite = true;
    for (std::int64_t kk = 0; kk < c.k; ++kk) {
      finite = finite && std::isfinite(row[kk]);
      amax = std::max(amax, std::fabs(row[kk]));
    }
    const float s = finite ? amax / 127.0f : kNaN;
    std::vector<std::int32_t> qx(static_cast<std::size_t>(c.k), 0);
    if (s > 0.0f)
      for (std::int64_t kk = 0; kk < c.k; ++kk)
        qx[static_cast<std::size_t>(kk)] =
            static_cast<std::int32_t>(std::clamp(std::nearbyint(row[kk] / s), -127.0f, 127.0f));
    for (std::int64_t j = 0; j < c.n; ++j) {
      std::int64_t dot = 0;
      for (std::int64_t kk = 0; kk < c.k; ++kk)
        dot += qx[static_cast<std::size_t>(kk)] * std::int64_t{c.w.values[static_cast<std::size_t>(j * c.k + kk)]};
      float v = (s * c.w.scales[static_cast<std::size_t>(j)]) * static_cast<float>(dot);
      if (!c.bias.empty()) v += c.bias[static_cast<std::size_t>(j)];
      float& out = y[static_cast<std::size_t>(i * c.ldy + j)];
      if (c.beta != 0.0f) v += c.beta * out;
      out = v;
    }
  }
  return y;
}

Case random_case(std::int64_t m, std::int64_t n, std::int64_t k, float beta, bool bias, Generator& gen) {
  Case c{m, n, k, k + 3, n + 2, random_values(m * (k + 3), gen), {}, {}, beta, random_values(m * (n + 2), gen)};
  const std::vector<float> w = random_values(n * k, gen);
  c.w = blas::quantize_rows(w.data(), n, k, k);
  if (bias) c.bias = random_values(n, gen);
  return c;
}

blas::PackedMatrix pack(const Case& c) {
  return blas::PackedMatrix::from_int8(c.w.values.data(), c.w.scales.data(), c.n, c.k);
}

// Equal bit for bit, NaN where NaN.
bool same(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0 || (std::isnan(a) && std::isnan(b)); }

bool same(const blas::RowSummary& a, const blas::RowSummary& b) {
  return same(a.max, b.max) && a.best == b.best && same(a.best_value, b.best_value) &&
         (std::memcmp(&a.exp_sum, &b.exp_sum, sizeof a.exp_sum) == 0 || (std::isnan(a.exp_sum) && std::isnan(b.exp_sum)));
}

// Every path against the oracle, bit for bit (the stride's padding untouched),
// its summaries against the stored y's, and the paths' summaries against each
// other bit for bit. Then store_y false: y untouched, the same summaries.
void check_paths(const Case& c, std::int64_t skip) {
  const blas::PackedMatrix w = pack(c);
  const std::vector<float> want = oracle(c);
  const float* bias = c.bias.empty() ? nullptr : c.bias.data();
  std::vector<blas::RowSummary> first;
  for (Int8Kernel path : paths_here()) {
    CAPTURE(std::string(blas::detail::int8_kernel_name(path)));
    std::vector<float> y = c.y0;
    std::vector<blas::RowSummary> rows(static_cast<std::size_t>(c.m));
    blas::detail::int8_product(c.m, c.x.data(), c.ldx, w, c.beta, y.data(), c.ldy, path, {bias, rows.data(), skip});
    std::int64_t differ = 0;
    for (std::size_t at = 0; at < y.size(); ++at) differ += same(y[at], want[at]) ? 0 : 1;
    REQUIRE(differ == 0);
    for (std::int64_t i = 0; i < c.m; ++i)
      check_summary(rows[static_cast<std::size_t>(i)], summary_of(y.data() + i * c.ldy, c.n, skip));
    if (first.empty()) first = rows;
    for (std::size_t i = 0; i < rows.size(); ++i) CHECK(same(rows[i], first[i]));
    if (c.beta != 0.0f) continue;
    std::vector<float> untouched = c.y0;
    std::vector<blas::RowSummary> alone(static_cast<std::size_t>(c.m));
    blas::detail::int8_product(c.m, c.x.data(), c.ldx, w, 0.0f, untouched.data(), c.ldy, path,
                               {bias, alone.data(), skip, false});
    CHECK(std::memcmp(untouched.data(), c.y0.data(), untouched.size() * sizeof(float)) == 0);
    for (std::size_t i = 0; i < rows.size(); ++i) CHECK(same(alone[i], rows[i]));
  }
}

}  // namespace

TEST_CASE("int8: quantize_rows by hand: scale max |w| / 127, round to nearest with ties to even, zero rows") {
  // (3, 4) with a row stride of 5; the fifth column is NaN and must not be read
  const std::vector<float> w = {63.5f, -31.5f, 0.5f,  0.0f, kNaN,  //
                                0.0f,  0.0f,   0.0f,  0.0f, kNaN,  //
                                -254.0f, 101.2f, 3.0f, 5.0f, kNaN};
  const blas::QuantizedRows q = blas::quantize_rows(w.data(), 3, 4, 5);
  CHECK(q.n == 3);
  CHECK(q.k == 4);
  CHECK(q.scales == std::vector<float>{0.5f, 0.0f, 2.0f});
  // 101.2 / 2 = 50.6 -> 51; 3 / 2 = 1.5 -> 2 and 5 / 2 = 2.5 -> 2 (ties to even)
  CHECK(q.values == std::vector<std::int8_t>{127, -63, 1, 0, 0, 0, 0, 0, -127, 51, 2, 2});
}

TEST_CASE("int8: every path equals the scalar oracle bit for bit at awkward sizes, summaries from the stored y") {
  Generator gen(41);
  for (std::int64_t m : {1, 3, 17, 64})
    for (std::int64_t n : {1, 15, 16, 17, 1000})
      for (std::int64_t k : {1, 3, 4, 5, 64, 257}) {
        CAPTURE(m);
        CAPTURE(n);
        CAPTURE(k);
        const bool bias = (m + n + k) % 2 == 0;  // half the cases without a bias
        const float beta = k % 2 == 0 ? 0.0f : 0.5f;
        check_paths(random_case(m, n, k, beta, bias, gen), n / 2);
      }
}

TEST_CASE("int8: the distance from the float product is within the bound int8_gemm.hpp states") {
  Generator gen(43);
  const std::int64_t m = 17, n = 40, k = 257;
  std::vector<float> x = random_values(m * k, gen), w = random_values(n * k, gen);
  for (std::int64_t kk = 0; kk < k; ++kk) x[static_cast<std::size_t>(kk)] *= 100.0f;  // one row of larger values
  const blas::QuantizedRows q = blas::quantize_rows(w.data(), n, k, k);
  const blas::PackedMatrix packed = blas::PackedMatrix::from_int8(q.values.data(), q.scales.data(), n, k);
  for (Int8Kernel path : paths_here()) {
    CAPTURE(std::string(blas::detail::int8_kernel_name(path)));
    std::vector<float> y(static_cast<std::size_t>(m * n));
    blas::detail::int8_product(m, x.data(), k, packed, 0.0f, y.data(), n, path);
    double worst = 0;  // the largest share of the bound used
    for (std::int64_t i = 0; i < m; ++i) {
      const float* x_i = x.data() + i * k;
      float amax = 0;
      for (std::int64_t kk = 0; kk < k; ++kk) amax = std::max(amax, std::fabs(x_i[kk]));
      const double s = amax / 127.0;
      for (std::int64_t j = 0; j < n; ++j) {
        const double scale = q.scales[static_cast<std::size_t>(j)];
        double exact = 0, bound = 0, size = 0;
        for (std::int64_t kk = 0; kk < k; ++kk) {
          const double xv = x_i[kk], wv = w[static_cast<std::size_t>(j * k + kk)];
          exact += xv * wv;
          bound += std::fabs(xv) * scale / 2 + std::fabs(wv) * s / 2 + s * scale / 4;
          size += std::fabs(xv * wv) + s * scale * 127 * 127;
        }
        bound += 1e-6 * size;  // float rounding: the conversion and the three roundings after it
        const double error = std::fabs(y[static_cast<std::size_t>(i * n + j)] - exact);
        CHECK(error <= bound);
        worst = std::max(worst, error / bound);
      }
    }
    CHECK(worst > 0.01);  // the product is int8's, not float's: it is off by some share of the bound
  }
}

TEST_CASE("int8: skip leaves out the best column, beta and no bias, and gemm_packed runs int8 for an int8 W") {
  Generator gen(47);
  Case c = random_case(5, 33, 20, 0.0f, true, gen);
  c.bias[7] = 100.0f;  // column 7 is every row's best
  const blas::PackedMatrix w = pack(c);
  std::vector<float> y(c.y0.size());
  std::vector<blas::RowSummary> rows(5);
  blas::gemm_packed(c.m, c.x.data(), c.ldx, w, 0.0f, y.data(), c.ldy, {c.bias.data(), rows.data(), 7});
  for (std::int64_t i = 0; i < c.m; ++i) {
    const blas::RowSummary& r = rows[static_cast<std::size_t>(i)];
    CHECK(r.max == y[static_cast<std::size_t>(i * c.ldy + 7)]);
    CHECK(r.best != 7);
    CHECK(r.best >= 0);
    check_summary(r, summary_of(y.data() + i * c.ldy, c.n, 7));
  }
  check_paths(c, 7);
  c.bias.clear();  // no bias, beta 2
  c.beta = 2.0f;
  check_paths(c, -1);
  // gemm_packed: the widest path, counted as a packed product
  blas::set_gemm_timing(true);
  std::vector<float> by_gemm = c.y0;
  blas::gemm_packed(c.m, c.x.data(), c.ldx, w, c.beta, by_gemm.data(), c.ldy);
  blas::set_gemm_timing(false);
  CHECK(blas::gemm_stats().calls == 1);
  CHECK(blas::gemm_stats().flops == doctest::Approx(2.0 * 5 * 33 * 20));
  const std::vector<float> want = oracle(c);
  for (std::size_t at = 0; at < want.size(); ++at) CHECK(same(by_gemm[at], want[at]));
}

TEST_CASE("int8: zero rows of x and of W give the bias, a row of x with NaN or inf gives a NaN row") {
  Generator gen(53);
  Case c = random_case(4, 20, 9, 0.0f, true, gen);
  for (std::int64_t kk = 0; kk < c.k; ++kk) {
    c.x[static_cast<std::size_t>(0 * c.ldx + kk)] = 0.0f;  // row 0 zeros
    c.w.values[static_cast<std::size_t>(3 * c.k + kk)] = 0;  // W's row 3 zeros
  }
  c.w.scales[3] = 0.0f;
  c.x[static_cast<std::size_t>(1 * c.ldx + 4)] = kNaN;  // row 1 with a NaN
  c.x[static_cast<std::size_t>(2 * c.ldx + 8)] = -kInf;  // row 2 with -inf
  check_paths(c, -1);
  const blas::PackedMatrix w = pack(c);
  for (Int8Kernel path : paths_here()) {
    std::vector<float> y(c.y0.size(), 0.0f);
    std::vector<blas::RowSummary> rows(4);
    blas::detail::int8_product(c.m, c.x.data(), c.ldx, w, 0.0f, y.data(), c.ldy, path, {c.bias.data(), rows.data()});
    for (std::int64_t j = 0; j < c.n; ++j) {
      CHECK(y[static_cast<std::size_t>(j)] == c.bias[static_cast<std::size_t>(j)]);
      CHECK(std::isnan(y[static_cast<std::size_t>(1 * c.ldy + j)]));
      CHECK(std::isnan(y[static_cast<std::size_t>(2 * c.ldy + j)]));
    }
    for (std::int64_t i : {0, 3}) CHECK(y[static_cast<std::size_t>(i * c.ldy + 3)] == c.bias[3]);
    for (std::size_t i : {1u, 2u}) {
      CHECK(rows[i].best == -1);
      CHECK(rows[i].max == -kInf);
      CHECK(std::isnan(rows[i].exp_sum));
    }
  }
}

TEST_CASE("int8: refusals: bad sizes, K too large, bad scales or values, float access to an int8 W") {
  const std::vector<float> w(12, 1.0f);
  CHECK_THROWS_AS(blas::quantize_rows(w.data(), -1, 4, 4), Error);
  CHECK_THROWS_AS(blas::quantize_rows(w.data(), 3, -4, 4), Error);
  CHECK_THROWS_AS(blas::quantize_rows(w.data(), 3, 4, 3), Error);
  CHECK_THROWS_AS(blas::quantize_rows(nullptr, 3, 4, 4), Error);
  for (float bad : {kNaN, kInf, -kInf}) {
    std::vector<float> v = w;
    v[6] = bad;
    CHECK_THROWS_AS(blas::quantize_rows(v.data(), 3, 4, 4), Error);
  }
  const std::vector<std::int8_t> q(12, 1);
  const std::vector<float> scales = {1.0f, 1.0f, 1.0f};
  CHECK_THROWS_AS(blas::PackedMatrix::from_int8(q.data(), scales.data(), -1, 4), Error);
  CHECK_THROWS_AS(blas::PackedMatrix::from_int8(q.data(), scales.data(), 3, -1), Error);
  CHECK_THROWS_AS(blas::PackedMatrix::from_int8(nullptr, scales.data(), 3, 4), Error);
  CHECK_THROWS_AS(blas::PackedMatrix::from_int8(q.data(), nullptr, 3, 4), Error);
  const std::int64_t too_long = blas::PackedMatrix::kInt8MaxK + 1;
  CHECK(255.0 * 127.0 * blas::PackedMatrix::kInt8MaxK < 2147483648.0);
  CHECK(255.0 * 127.0 * too_long >= 2147483648.0);
  const std::vector<std::int8_t> long_row(static_cast<std::size_t>(too_long), 1);
  CHECK_THROWS_AS(blas::PackedMatrix::from_int8(long_row.data(), scales.data(), 1, too_long), Error);
  CHECK_NOTHROW(blas::PackedMatrix::from_int8(long_row.data(), scales.data(), 1, too_long - 1));
  for (float bad : {-1.0f, kNaN, kInf}) {
    std::vector<float> s = scales;
    s[1] = bad;
    CHECK_THROWS_AS(blas::PackedMatrix::from_int8(q.data(), s.data(), 3, 4), Error);
  }
  std::vector<std::int8_t> low = q;
  low[5] = -128;
  CHECK_THROWS_AS(blas::PackedMatrix::from_int8(low.data(), scales.data(), 3, 4), Error);
  // an int8 W: no float panels, no float kernel; a float W: no int8 product
  const blas::PackedMatrix packed = blas::PackedMatrix::from_int8(q.data(), scales.data(), 3, 4);
  CHECK(packed.int8());
  CHECK_THROWS_AS(packed.panel(0), Error);
  const std::vector<float> x(8, 1.0f);
  std::vector<float> y(6);
  CHECK_THROWS_AS(blas::detail::packed_product(2, x.data(), 4, packed, 0.0f, y.data(), 3,
                                               blas::detail::PackedKernel::Baseline),
                  Error);
  const blas::PackedMatrix as_float(w.data(), 3, 4, 4);
  CHECK_FALSE(as_float.int8());
  CHECK_THROWS_AS(blas::detail::int8_product(2, x.data(), 4, as_float, 0.0f, y.data(), 3, Int8Kernel::Portable),
                  Error);
  // strides, and store_y false without summaries
  CHECK_THROWS_AS(blas::gemm_packed(2, x.data(), 3, packed, 0.0f, y.data(), 3), Error);
  CHECK_THROWS_AS(blas::gemm_packed(2, x.data(), 4, packed, 0.0f, y.data(), 2), Error);
  CHECK_THROWS_AS(blas::gemm_packed(2, x.data(), 4, packed, 0.0f, y.data(), 3, {nullptr, nullptr, -1, false}), Error);
  CHECK_NOTHROW(blas::gemm_packed(2, x.data(), 4, packed, 0.0f, y.data(), 3));
  CHECK(y[0] == doctest::Approx(4.0f));  // x all 1 (s = 1/127, qx = 127), q all 1, scale 1: (1/127 * 1) * 508
  for (Int8Kernel path : {Int8Kernel::Vnni, Int8Kernel::Avx2})
    if (!blas::detail::int8_kernel_runs(path))
      CHECK_THROWS_AS(blas::detail::int8_product(2, x.data(), 4, packed, 0.0f, y.data(), 3, path), Error);
}

TEST_CASE("int8: x's rows with halves (ties to even), negative zeros and lengths past the vectors' 8 and 16") {
  Generator gen(21);
  for (std::int64_t k : {1, 7, 8, 9, 16, 17, 21, 40}) {
    CAPTURE(k);
    Case c;
    c.m = 3;
    c.n = 19;
    c.k = k;
    c.ldx = k + 2;
    c.ldy = c.n;
    c.x.assign(static_cast<std::size_t>(c.m * c.ldx), kNaN);  // the padding must not be read
    for (std::int64_t i = 0; i < c.m; ++i)
      for (std::int64_t kk = 0; kk < k; ++kk) {
        // scale 1 (row 0: max 127), 0.5 (row 1: max 63.5), 2 (row 2: max 254): every value a tie after division
        const float tie = static_cast<float>(kk % 7) - 3.0f + 0.5f;  // -2.5 .. 3.5
        c.x[static_cast<std::size_t>(i * c.ldx + kk)] = kk == k - 1 ? 127.0f : tie;
        if (i == 1) c.x[static_cast<std::size_t>(i * c.ldx + kk)] *= 0.5f;
        if (i == 2) c.x[static_cast<std::size_t>(i * c.ldx + kk)] = kk == 0 && k > 1 ? -0.0f : 2.0f * c.x[static_cast<std::size_t>(i * c.ldx + kk)];
      }
    const std::vector<float> w = random_values(c.n * k, gen);
    c.w = blas::quantize_rows(w.data(), c.n, k, k);
    c.y0.assign(static_cast<std::size_t>(c.m * c.ldy), 0.0f);
    check_paths(c, -1);
  }
}
