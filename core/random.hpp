#pragma once
// Generator: seeded random numbers that are the same on every machine and
// compiler. The engine is xoshiro256** (Blackman & Vigna), seeded through
// splitmix64; the distributions are written here rather than taken from
// <random>, whose std::normal_distribution differs between standard libraries.
#include <array>
#include <cstdint>

namespace attend {

class Generator {
 public:
  explicit Generator(std::uint64_t seed = 0) { manual_seed(seed); }
  void manual_seed(std::uint64_t seed);

  std::uint64_t next_u64();
  double uniform();                        // in [0, 1), 53 random bits
  double uniform(double lo, double hi);    // in [lo, hi)
  double normal(double mean = 0.0, double stddev = 1.0);  // Box-Muller
  std::int64_t randint(std::int64_t n);    // in [0, n), unbiased
  bool bernoulli(double p);                // true with probability p

  // The whole state, so that training can be checkpointed and resumed.
  std::array<std::uint64_t, 4> state() const { return s_; }
  void set_state(const std::array<std::uint64_t, 4>& s) { s_ = s; }

 private:
  std::array<std::uint64_t, 4> s_{};
};

}  // namespace attend
