// libFuzzer's entry point for one target, fuzz_NAME: built once per line of
// tests/fuzz/targets.txt with ATTEND_FUZZ_FUNCTION=attend::fuzz::fuzz_NAME (the
// body is in targets_*.cpp).
#include "tests/fuzz/targets.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return ATTEND_FUZZ_FUNCTION(data, size);
}
