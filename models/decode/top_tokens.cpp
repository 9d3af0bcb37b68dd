#include "models/decode/top_tokens.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "core/kernels/detail/fast_math.hpp"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace attend {

namespace {

constexpr std::int64_t kBlock = 8;
constexpr double kMinusInf = -std::numeric_limits<double>::infinity();

// The largest of x[0], ..., x[7], NaN passed over (-inf when all are NaN).
// SSE2 (every x86-64) by hand: the compiler kept the plain loop scalar.
double block_max(const double* x) {
#if defined(__SSE2__)
  __m128d m = _mm_set1_pd(kMinusInf);
  for (int j = 0; j < kBlock; j += 2) m = _mm_max_pd(_mm_loadu_pd(x + j), m);  // x > m ? x : m, so NaN keeps m
  return _mm_cvtsd_f64(_mm_max_pd(_mm_unpackhi_pd(m, m), m));
#else
  double m = kMinusInf;
  for (int j = 0; j < kBlock; ++j) m = x[j] > m ? x[j] : m;
  return m;
#endif
}

double block_max(const float* x) {
#if defined(__SSE2__)
  const __m128 m = _mm_max_ps(_mm_loadu_ps(x + 4), _mm_max_ps(_mm_loadu_ps(x), _mm_set1_ps(-INFINITY)));
  const __m128 pairs = _mm_max_ps(_mm_movehl_ps(m, m), m);                 // lanes 0 and 1 of interest
  return _mm_cvtss_f32(_mm_max_ss(_mm_shuffle_ps(pairs, pairs, 1), pairs));  // never NaN: -inf is the floor
#else
  float m = -INFINITY;
  for (int j = 0; j < kBlock; ++j) m = x[j] > m ? x[j] : m;
  return m;
#endif
}

// Tokens are offered in rising id, so a token beats the worst one kept exactly
// when its log p is higher. Most tokens need not be offered at all: the
// `keep`-th largest of the blocks' maxima is `keep` different tokens' log p, so
// the keep-th best token, and every token of the answer, is at least that
// bound; a block with nothing reaching it is passed over whole. At V = 1000
// and keep = 10 that leaves about 10 of 125 blocks to look into.
template <class T>
void best_tokens_of(const T* logp, std::int64_t V, std::int64_t keep, std::vector<std::int64_t>& top,
                    std::vector<double>& scratch) {
  top.clear();
  if (keep <= 0 || V <= 0) return;
  auto better = [&](std::int64_t x, std::int64_t y) { return logp[x] > logp[y] || (logp[x] == logp[y] && x < y); };
  auto offer = [&](std::int64_t v) {
    if (std::isnan(logp[v])) return;
    if (static_cast<std::int64_t>(top.size()) == keep) {
      if (!(logp[v] > logp[top.back()])) return;
      top.pop_back();
    }
    top.insert(std::upper_bound(top.begin(), top.end(), v, better), v);
  };
  const std::int64_t blocks = V / kBlock;
  scratch.resize(static_cast<std::size_t>(keep + blocks));
  double* best = scratch.data();  // the best `keep` maxima so far, largest first
  double* maxima = best + keep;   // (blocks)
  // The best maxima by insertion: after the first blocks few get in, so this
  // is cheaper than std::nth_element, which moves every block's maximum.
  std::int64_t n = 0;
  for (std::int64_t i = 0; i < blocks; ++i) {
    const double m = maxima[i] = block_max(logp + i * kBlock);  // never NaN
    if (n == keep) {
      if (!(m > best[n - 1])) continue;
      --n;
    }
    std::int64_t j = n++;
    for (; j > 0 && best[j - 1] < m; --j) best[j] = best[j - 1];
    best[j] = m;
  }
  const double bound = n == keep ? best[keep - 1] : kMinusInf;
  for (std::int64_t i = 0; i < blocks; ++i)
    if (maxima[i] >= bound)
      for (std::int64_t v = i * kBlock; v < (i + 1) * kBlock; ++v)
        if (logp[v] >= bound) offer(v);  // below it, never in the answer
  for (std::int64_t v = blocks * kBlock; v < V; ++v)
    if (logp[v] >= bound) offer(v);
}

}  // namespace

void best_tokens(const double* logp, std::int64_t V, std::int64_t keep, std::vector<std::int64_t>& top,
                 std::vector<double>& scratch) {
  best_tokens_of(logp, V, keep, top, scratch);
}
void best_tokens(const float* logp, std::int64_t V, std::int64_t keep, std::vector<std::int64_t>& top,
                 std::vector<double>& scratch) {
  best_tokens_of(logp, V, keep, top, scratch);
}

namespace {
// The first v with logp[v] == m (the row's largest value, NaN passed over); 0 if none (every one NaN).
// A block of 16 is tested whole first, in a loop without an exit, which the
// compiler vectorises; a scalar scan with an early exit cannot be vectorised.
// Compared as T: a float equals m exactly when it equals m as a float, and m
// is one (no float equals an m that is not).
template <class T>
std::int64_t first_equal(const T* logp, std::int64_t V, double m_double) {
  const T m = static_cast<T>(m_double);
  if (static_cast<double>(m) != m_double) return 0;
  constexpr std::int64_t kWide = 16;
  std::int64_t v = 0;
  for (; v + kWide <= V; v += kWide) {
    int hits = 0;
    for (std::int64_t j = 0; j < kWide; ++j) hits += logp[v + j] == m;
    if (hits > 0) break;
  }
  for (; v < V; ++v)
    if (logp[v] == m) return v;
  return 0;
}
}  // namespace

std::int64_t best_token(const double* logp, std::int64_t V) { return first_equal(logp, V, fast_math::max(logp, V)); }
std::int64_t best_token(const float* logp, std::int64_t V) { return first_equal(logp, V, fast_math::max(logp, V)); }
std::int64_t best_token(const double* logp, std::int64_t V, double max) { return first_equal(logp, V, max); }
std::int64_t best_token(const float* logp, std::int64_t V, double max) { return first_equal(logp, V, max); }

std::vector<std::int64_t> best_tokens_by_sorting(const double* logp, std::int64_t V, std::int64_t keep) {
  std::vector<std::int64_t> ids;
  for (std::int64_t v = 0; v < V; ++v)
    if (!std::isnan(logp[v])) ids.push_back(v);
  std::stable_sort(ids.begin(), ids.end(), [&](std::int64_t x, std::int64_t y) { return logp[x] > logp[y]; });
  if (static_cast<std::int64_t>(ids.size()) > keep) ids.resize(static_cast<std::size_t>(std::max<std::int64_t>(keep, 0)));
  return ids;
}

}  // namespace attend
