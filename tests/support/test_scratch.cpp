// tests/support/scratch.hpp: a test's scratch directory is gone when the test ends,
// however it ends; tests.no_scratch_left (tests/support/no_scratch_left.cmake) checks
// that the test programs use it.
#include <doctest/doctest.h>

#include <filesystem>
#include <stdexcept>
#include <string>

#include "tests/support/scratch.hpp"

namespace fs = std::filesystem;
using attend::testing::Scratch;

TEST_CASE("a scratch directory is removed with its contents at the end of its scope") {
  fs::path dir;
  {
    const Scratch s("attend_scratch");
    dir = s.dir;
    CHECK(fs::is_directory(dir));
    fs::create_directories(dir / "model" / "checkpoint");
    s.write("model/checkpoint/state.json", "{}");
    CHECK(fs::exists(s.path("model/checkpoint/state.json")));
  }
  CHECK_FALSE(fs::exists(dir));
}

TEST_CASE("a scratch directory is removed when a failed check throws out of the test") {
  fs::path dir;
  try {
    const Scratch s("attend_scratch");
    dir = s.dir;
    s.write("file.txt", "x");
    throw std::runtime_error("a REQUIRE failed");
  } catch (const std::runtime_error&) {
  }
  REQUIRE_FALSE(dir.empty());
  CHECK_FALSE(fs::exists(dir));
}

TEST_CASE("scratch directories alive at once are distinct") {
  const Scratch a("attend_scratch"), b("attend_scratch");
  CHECK(a.dir != b.dir);
  a.write("one.txt", "1");
  CHECK(fs::exists(a.path("one.txt")));
  CHECK_FALSE(fs::exists(b.path("one.txt")));
}
