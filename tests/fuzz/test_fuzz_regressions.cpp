// The fuzz targets (tests/fuzz/) in the normal suite: every committed seed
// (tests/fuzz/corpus/<target>/) and every input that once crashed a reader
// (tests/fuzz/regressions/<target>/) goes through the same function libFuzzer
// calls. A target swallows attend::Error, the expected answer to bad input;
// anything else escaping it (another exception type, a fuzz::Finding for a
// broken invariant) fails here, and the sanitize build catches memory errors
// and undefined behaviour as the fuzzer does.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/io/file_io.hpp"
#include "tests/fuzz/targets.hpp"

namespace fs = std::filesystem;
using attend::fuzz::Target;

namespace {

const fs::path kFuzzDir = ATTEND_FUZZ_DIR;

std::vector<fs::path> files_in(const fs::path& dir) {
  std::vector<fs::path> files;
  if (fs::is_directory(dir))
    for (const auto& entry : fs::directory_iterator(dir))
      if (entry.is_regular_file()) files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  return files;
}

const Target* find_target(std::string_view name) {
  for (const Target& t : attend::fuzz::targets())
    if (t.name == name) return &t;
  return nullptr;
}

// Runs every file of kind/<target>/ (kind: corpus, regressions, pending) through the target.
int replay(std::string_view name, const char* kind) {
  const Target* target = find_target(name);
  REQUIRE(target != nullptr);
  int count = 0;
  for (const fs::path& file : files_in(kFuzzDir / kind / std::string(name))) {
    INFO("replay: ", file.string());
    const std::string bytes = attend::read_file(file.string());
    CHECK(bytes.size() <= target->max_len);  // libFuzzer (-max_len) could not shrink it otherwise
    CHECK_NOTHROW(target->run(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()));
    ++count;
  }
  return count;
}

void replay_all(std::string_view name) {
  CHECK(replay(name, "corpus") > 0);  // every target has seeds
  replay(name, "regressions");
}

}  // namespace

TEST_CASE("fuzz: the corpus and regression directories name the targets") {
  for (const char* kind : {"corpus", "regressions", "pending"}) {
    if (!fs::is_directory(kFuzzDir / kind)) continue;
    for (const auto& entry : fs::directory_iterator(kFuzzDir / kind)) {
      if (!entry.is_directory()) continue;  // pending/README.md
      INFO(entry.path().string());
      CHECK(find_target(entry.path().filename().string()) != nullptr);
    }
  }
  // Every target of tests/fuzz/targets.txt starts from seeds of its own.
  CHECK(!attend::fuzz::targets().empty());
  for (const Target& t : attend::fuzz::targets()) {
    INFO(t.name);
    CHECK(fs::is_directory(kFuzzDir / "corpus" / std::string(t.name)));
    CHECK(!fs::is_empty(kFuzzDir / "corpus" / std::string(t.name)));
  }
}

TEST_CASE("fuzz replay: safetensors") { replay_all("safetensors"); }
TEST_CASE("fuzz replay: mo") { replay_all("mo"); }
TEST_CASE("fuzz replay: corpus") { replay_all("corpus"); }
TEST_CASE("fuzz replay: vocabulary") { replay_all("vocabulary"); }
TEST_CASE("fuzz replay: config") { replay_all("config"); }
TEST_CASE("fuzz replay: trainer_state") { replay_all("trainer_state"); }
TEST_CASE("fuzz replay: alignment") { replay_all("alignment"); }
TEST_CASE("fuzz replay: tokenizer") { replay_all("tokenizer"); }
TEST_CASE("fuzz replay: bleu") { replay_all("bleu"); }
TEST_CASE("fuzz replay: roundtrip") { replay_all("roundtrip"); }
TEST_CASE("fuzz replay: serve_request") { replay_all("serve_request"); }
TEST_CASE("fuzz replay: quantized_weights") { replay_all("quantized_weights"); }

TEST_CASE("fuzz: a finding escapes the target") {
  // The roundtrip target's comparison is what catches a writer/reader mismatch:
  // make sure a Finding is not an attend::Error that a target would swallow.
  CHECK_THROWS_AS(attend::fuzz::finding("x"), attend::fuzz::Finding);
  bool swallowed = false;
  try {
    attend::fuzz::finding("x");
  } catch (const attend::Error&) {
    swallowed = true;
  } catch (const attend::fuzz::Finding&) {
  }
  CHECK_FALSE(swallowed);
}

// Inputs of defects found by fuzzing and not fixed yet (tests/fuzz/pending/README.md
// says what each shows). may_fail: the suite stays green while they wait, and the
// failure shows in the output. When the defect is fixed, move the file to
// tests/fuzz/regressions/<target>/. Some (UBSan's float-cast-overflow) fail only
// in the clang fuzz build, which GCC's -fsanitize=undefined does not check.
TEST_CASE("fuzz pending: found by fuzzing, not fixed yet" * doctest::may_fail()) {
  int count = 0;
  for (const Target& t : attend::fuzz::targets()) count += replay(t.name, "pending");
  MESSAGE(count, " pending fuzz inputs replayed (tests/fuzz/pending/)");
}
