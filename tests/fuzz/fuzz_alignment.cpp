// libFuzzer's entry point for the alignment target (the body is in targets*.cpp).
#include "tests/fuzz/targets.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return attend::fuzz::fuzz_alignment(data, size);
}
