// models/decode/top_tokens: beam search's choice of each beam's best tokens, held
// against sorting the whole row, on rows with ties, -inf, NaN and every
// vocabulary size around the block of 8 the fast version skips by.
#include <doctest/doctest.h>

#include <cmath>
#include <algorithm>
#include <limits>
#include <vector>

#include "core/random.hpp"
#include "models/decode/top_tokens.hpp"

using namespace attend;

namespace {

const double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::numeric_limits<double>::quiet_NaN();

std::vector<std::int64_t> fast(const std::vector<double>& row, std::int64_t keep) {
  std::vector<std::int64_t> top;
  std::vector<double> scratch;
  best_tokens(row.data(), static_cast<std::int64_t>(row.size()), keep, top, scratch);
  return top;
}

}  // namespace

TEST_CASE("best tokens by hand: best first, the lower id first on a tie, NaN never") {
  const std::vector<double> row = {-2.0, -0.5, -1.0, -0.5, -kInf, kNaN, -3.0};
  CHECK(fast(row, 1) == std::vector<std::int64_t>{1});
  CHECK(fast(row, 3) == std::vector<std::int64_t>{1, 3, 2});
  CHECK(fast(row, 6) == std::vector<std::int64_t>{1, 3, 2, 0, 6, 4});
  CHECK(fast(row, 7) == std::vector<std::int64_t>{1, 3, 2, 0, 6, 4});  // six numbers: six tokens
  CHECK(fast(row, 0).empty());
  CHECK(fast({kNaN, kNaN}, 2).empty());
  CHECK(best_tokens_by_sorting(row.data(), 7, 3) == std::vector<std::int64_t>{1, 3, 2});
}

TEST_CASE("best tokens equal sorting the whole row, over sizes, ties, -inf and NaN") {
  Generator gen(11);
  std::vector<std::int64_t> top;
  std::vector<double> scratch;  // reused from row to row, as in beam search
  int rows = 0, tied = 0;
  for (const std::int64_t V : {1, 5, 7, 8, 9, 15, 16, 17, 63, 80, 81, 1000}) {
    for (const std::int64_t keep : {1, 2, 3, 10, 16}) {
      for (int trial = 0; trial < 20; ++trial) {
        // Values from a few levels make ties common; a share of -inf and NaN;
        // one row in four falls with the id, so the best sit in the first block.
        std::vector<double> row(static_cast<std::size_t>(V));
        const int levels = 1 + static_cast<int>(gen.randint(6));
        for (std::int64_t v = 0; v < V; ++v) {
          const double u = gen.uniform();
          row[v] = u < 0.05 ? -kInf : u < 0.1 ? kNaN : -static_cast<double>(gen.randint(levels)) - 0.25 * (trial % 4 == 0) * v;
        }
        const std::vector<std::int64_t> expected = best_tokens_by_sorting(row.data(), V, keep);
        best_tokens(row.data(), V, keep, top, scratch);
        CAPTURE(V);
        CAPTURE(keep);
        CAPTURE(trial);
        CHECK(top == expected);
        ++rows;
        for (std::size_t i = 1; i < expected.size(); ++i) tied += row[expected[i]] == row[expected[i - 1]];
      }
    }
  }
  CHECK(rows == 12 * 5 * 20);
  CHECK(tied > 100);  // the ties the rule is about did come up
}

TEST_CASE("best tokens of a large random row, as beam search sees it (V = 8000, keep 10)") {
  Generator gen(5);
  std::vector<double> row(8000);
  for (double& x : row) x = gen.normal(-9.0, 1.0);
  CHECK(fast(row, 10) == best_tokens_by_sorting(row.data(), 8000, 10));
}

TEST_CASE("float rows (a float32 model's logits) give the tokens their values in double give") {
  Generator gen(12);
  std::vector<std::int64_t> top;
  std::vector<double> scratch;
  for (const std::int64_t V : {5, 8, 17, 1000}) {
    for (int trial = 0; trial < 30; ++trial) {
      std::vector<float> row(static_cast<std::size_t>(V));
      std::vector<double> as_double(row.size());
      for (std::size_t v = 0; v < row.size(); ++v) {
        const double u = gen.uniform();
        row[v] = u < 0.05f ? -INFINITY : u < 0.1 ? NAN : static_cast<float>(-static_cast<double>(gen.randint(4)) + gen.normal() * (trial % 2));
        as_double[v] = row[v];
      }
      best_tokens(row.data(), V, 10, top, scratch);
      CAPTURE(V);
      CAPTURE(trial);
      CHECK(top == best_tokens_by_sorting(as_double.data(), V, 10));
    }
  }
}

TEST_CASE("best token: the first of the largest, NaN passed over, as std::max_element without NaN") {
  const std::vector<double> row = {-2.0, -0.5, kNaN, -0.5, -kInf};
  CHECK(best_token(row.data(), 5) == 1);
  const std::vector<float> f = {NAN, -3.0f, -1.0f, -1.0f};
  CHECK(best_token(f.data(), 4) == 2);
  const std::vector<double> all_nan = {kNaN, kNaN};
  CHECK(best_token(all_nan.data(), 2) == 0);
  const std::vector<double> all_minus_inf = {-kInf, -kInf, -kInf};
  CHECK(best_token(all_minus_inf.data(), 3) == 0);
  Generator gen(13);
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<double> x(static_cast<std::size_t>(1 + gen.randint(300)));
    for (double& v : x) v = static_cast<double>(gen.randint(20));  // many ties
    CHECK(best_token(x.data(), static_cast<std::int64_t>(x.size())) == std::max_element(x.begin(), x.end()) - x.begin());
    std::vector<float> xf(x.begin(), x.end());
    CHECK(best_token(xf.data(), static_cast<std::int64_t>(xf.size())) ==
          std::max_element(xf.begin(), xf.end()) - xf.begin());
  }
}

TEST_CASE("best token: the largest on either side of a block of 16, in the last partial block, tied across blocks") {
  for (const std::int64_t V : {15, 16, 17, 33, 1000}) {
    for (std::int64_t at = 0; at < V; ++at) {
      std::vector<float> x(static_cast<std::size_t>(V), -1.0f);
      x[static_cast<std::size_t>(at)] = 2.0f;
      if (at + 16 < V) x[static_cast<std::size_t>(at + 16)] = 2.0f;  // a tie in the next block: the first wins
      CHECK(best_token(x.data(), V) == at);
      CHECK(best_token(x.data(), V, 2.0) == at);
    }
  }
}
