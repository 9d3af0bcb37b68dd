// The core's float32 FMA peak, measured in the run that uses it: independent
// chains of fused multiply-adds at each vector width the CPU runs. `attend
// bench` divides its GFLOP/s by this, so that "how close to the machine" means
// the same on a CPU with full-width AVX-512, one that splits it into two
// 256-bit halves, and one with AVX2 alone.
#pragma once

#include <string>

namespace attend::tools {

struct FmaPeak {
  double gflops = 0;  // float32 GFLOP/s over all `threads` (an FMA counts 2)
  std::string isa;    // the vector width that reached it: "AVX-512", "AVX2" or "128-bit"
  int lanes = 0;      // float32 lanes of one vector at that width
  int chains = 0;     // independent accumulators per thread
  int threads = 1;
};

// Runs the probe on `threads` threads at once, at every width this CPU runs,
// and keeps the fastest: the ceiling no float32 code on these threads passes.
// About 0.1 s per width.
FmaPeak measure_fma_peak(int threads);

// The CPU's model name with its family and model numbers (/proc/cpuinfo), or
// "an unnamed CPU".
std::string cpu_model_name();

}  // namespace attend::tools
