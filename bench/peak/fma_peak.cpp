// The FMA probe behind `attend bench`'s "peak" line (fma_peak.hpp).
#include "bench/peak/fma_peak.hpp"

#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <functional>
#include <thread>
#include <vector>

namespace attend::tools {

namespace {

// Each probe runs `rounds` rounds of one FMA on each of its chains,
// acc = acc * m + a, and returns a sum of the accumulators so that no compiler
// drops the work. With m just under 1 the values settle near a / (1 - m): no
// overflow, no denormals to slow a round down. Enough chains to cover the FMA
// latency times the FMA units (4 cycles x 2 units on current x86 cores), within
// the vector registers of each width.

__attribute__((target("avx512f"))) float probe_avx512(long rounds) {
  constexpr int kChains = 16;  // of 32 zmm registers
  __m512 acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = _mm512_set1_ps(static_cast<float>(c));
  const __m512 m = _mm512_set1_ps(0.999999f), a = _mm512_set1_ps(1e-6f);
  for (long r = 0; r < rounds; ++r)
    for (int c = 0; c < kChains; ++c) acc[c] = _mm512_fmadd_ps(acc[c], m, a);
  __m512 sum = acc[0];
  for (int c = 1; c < kChains; ++c) sum = _mm512_add_ps(sum, acc[c]);
  alignas(64) float out[16];
  _mm512_store_ps(out, sum);
  float total = 0;
  for (float x : out) total += x;
  return total;
}

__attribute__((target("avx2,fma"))) float probe_avx2(long rounds) {
  constexpr int kChains = 12;  // of 16 ymm registers, two held by m and a
  __m256 acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = _mm256_set1_ps(static_cast<float>(c));
  const __m256 m = _mm256_set1_ps(0.999999f), a = _mm256_set1_ps(1e-6f);
  for (long r = 0; r < rounds; ++r)
    for (int c = 0; c < kChains; ++c) acc[c] = _mm256_fmadd_ps(acc[c], m, a);
  __m256 sum = acc[0];
  for (int c = 1; c < kChains; ++c) sum = _mm256_add_ps(sum, acc[c]);
  alignas(32) float out[8];
  _mm256_store_ps(out, sum);
  float total = 0;
  for (float x : out) total += x;
  return total;
}

// Any x86-64 CPU: SSE2's 128-bit vectors, as GCC's generic vectors (a
// multiply and an add where the CPU has no FMA, still two flops).
using Float4 = float __attribute__((vector_size(16)));
float probe_portable(long rounds) {
  constexpr int kChains = 12;
  Float4 acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = Float4{} + static_cast<float>(c);
  const Float4 m = Float4{} + 0.999999f, a = Float4{} + 1e-6f;
  for (long r = 0; r < rounds; ++r)
    for (int c = 0; c < kChains; ++c) acc[c] = acc[c] * m + a;
  Float4 sum = acc[0];
  for (int c = 1; c < kChains; ++c) sum += acc[c];
  return sum[0] + sum[1] + sum[2] + sum[3];
}

struct Width {
  const char* isa;
  int lanes, chains;
  float (*probe)(long);
};

// GFLOP/s of `threads` threads running one width's probe at once, the best of a
// few tries: a ceiling is the fastest the machine was seen to go.
double measure(const Width& w, int threads) {
  constexpr long kRounds = 1 << 22;  // tens of milliseconds a try: long beside a thread start
  std::vector<float> sink(static_cast<std::size_t>(threads));
  double best = 0;
  for (int attempt = 0; attempt < 3; ++attempt) {
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<std::thread> workers;
    for (int t = 1; t < threads; ++t) workers.emplace_back([&, t] { sink[t] = w.probe(kRounds); });
    sink[0] = w.probe(kRounds);
    for (std::thread& worker : workers) worker.join();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double flops = 2.0 * kRounds * w.chains * w.lanes * threads;
    best = std::max(best, flops / seconds / 1e9);
  }
  volatile float keep = sink[0];
  (void)keep;
  return best;
}

}  // namespace

FmaPeak measure_fma_peak(int threads) {
  threads = std::max(threads, 1);
  std::vector<Width> widths;
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) widths.push_back({"AVX-512", 16, 16, probe_avx512});
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) widths.push_back({"AVX2", 8, 12, probe_avx2});
  // A CPU that splits AVX-512 into halves, or runs AVX2 on more ports, peaks at
  // the narrower width: every width is tried, and the portable one where none runs.
  if (widths.empty()) widths.push_back({"128-bit", 4, 12, probe_portable});
  FmaPeak peak;
  peak.threads = threads;
  for (const Width& w : widths) {
    const double gflops = measure(w, threads);
    if (gflops > peak.gflops) peak = {gflops, w.isa, w.lanes, w.chains, threads};
  }
  return peak;
}

std::string cpu_model_name() {
  // The first processor's lines; a virtual machine's model name can be as
  // bare as "AMD EPYC", so the family and model numbers go with it.
  std::ifstream in("/proc/cpuinfo");
  std::string name, family, model;
  const auto value = [](const std::string& line) {
    std::string v = line.substr(line.find(':') + 1);
    v.erase(0, v.find_first_not_of(" \t"));
    return v;
  };
  for (std::string line; std::getline(in, line) && !line.empty();) {
    if (line.find(':') == std::string::npos) continue;
    if (line.rfind("model name", 0) == 0) name = value(line);
    else if (line.rfind("cpu family", 0) == 0) family = value(line);
    else if (line.rfind("model", 0) == 0 && line.find_first_not_of(" \t", 5) == line.find(':')) model = value(line);
  }
  if (name.empty()) name = "an unnamed CPU";
  if (!family.empty() && !model.empty()) name += " (family " + family + ", model " + model + ")";
  return name;
}

}  // namespace attend::tools
