#include "core/random.hpp"

#include <cmath>
#include <numbers>

#include "core/error.hpp"

namespace attend {
namespace {
std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

std::uint64_t splitmix64(std::uint64_t& x) {
  std::uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
}  // namespace

void Generator::manual_seed(std::uint64_t seed) {
  for (auto& word : s_) word = splitmix64(seed);
}

std::uint64_t Generator::next_u64() {
  const std::uint64_t result = rotl(s_[1] * 5, 7) * 9;
  const std::uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

double Generator::uniform() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }

double Generator::uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }

double Generator::normal(double mean, double stddev) {
  // Box-Muller: u1 in (0, 1] keeps the log finite.
  double u1 = 1.0 - uniform();
  double u2 = uniform();
  return mean + stddev * std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

std::int64_t Generator::randint(std::int64_t n) {
  if (n <= 0) fail("Generator::randint: n must be positive, got {}", n);
  // Rejection keeps every value equally likely.
  const std::uint64_t range = static_cast<std::uint64_t>(n);
  const std::uint64_t limit = UINT64_MAX - UINT64_MAX % range;
  std::uint64_t x;
  do x = next_u64();
  while (x >= limit);
  return static_cast<std::int64_t>(x % range);
}

bool Generator::bernoulli(double p) { return uniform() < p; }

}  // namespace attend
