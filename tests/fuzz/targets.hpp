#pragma once
// The bodies of the fuzz targets, as plain functions: each fuzz program fuzz_<name>
// (tests/fuzz/fuzz_main.cpp, built once per line of tests/fuzz/targets.txt) hands
// its libFuzzer input to one of them, and tests/fuzz/test_fuzz_regressions.cpp
// replays every committed seed and crash through the same function in the normal
// suite (gcc, release and sanitize builds, no libFuzzer).
//
// The contract of a target: attend::Error is the expected answer to bad input and
// is swallowed; anything else escapes and is a finding: another exception type
// (std::bad_alloc, nlohmann::json::exception, std::filesystem::filesystem_error,
// fuzz::Finding for a broken invariant such as a round-trip mismatch), an abort,
// or a sanitizer report. Every target returns 0.
#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>

namespace attend::fuzz {

int fuzz_safetensors(const std::uint8_t* data, std::size_t size);     // load_safetensors of a file
int fuzz_mo(const std::uint8_t* data, std::size_t size);              // parse_mo, extract_pairs
int fuzz_corpus(const std::uint8_t* data, std::size_t size);          // parse_tsv, read_tsv, encode_pairs
int fuzz_vocabulary(const std::uint8_t* data, std::size_t size);      // Vocabulary::load, save, load
int fuzz_config(const std::uint8_t* data, std::size_t size);          // load_model_dir with this config.json
int fuzz_trainer_state(const std::uint8_t* data, std::size_t size);   // Trainer::resume with this trainer_state.json
int fuzz_tokenizer(const std::uint8_t* data, std::size_t size);       // tokenize, detokenize, to_lower
int fuzz_bleu(const std::uint8_t* data, std::size_t size);            // corpus_bleu, sentence_bleu
int fuzz_roundtrip(const std::uint8_t* data, std::size_t size);       // save_safetensors then load: equal
int fuzz_alignment(const std::uint8_t* data, std::size_t size);       // UnkDictionary, hard_alignment, replace_unknown
int fuzz_serve_request(const std::uint8_t* data, std::size_t size);   // attend serve's request parser
int fuzz_quantized_weights(const std::uint8_t* data, std::size_t size);    // load_model_dir of an int8 model with this model.safetensors

struct Target {
  std::string_view name;  // the directory under tests/fuzz/corpus/ and regressions/
  int (*run)(const std::uint8_t* data, std::size_t size);
  std::size_t max_len;    // libFuzzer's -max_len for this format
};
std::span<const Target> targets();

// A broken invariant: deliberately not an attend::Error, so no target swallows it.
class Finding : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};
[[noreturn]] void finding(const std::string& what);

// A target calls this with the attend::Error it swallowed; with ATTEND_FUZZ_VERBOSE
// set in the environment it prints the message (to see why a replayed input is refused).
void expected(const std::exception& e);

// A scratch directory for this process (in /dev/shm when there is one, so that
// the fsyncs of atomic writes cost nothing), made on first use and removed at exit.
const std::string& scratch_dir();
// scratch_dir()/name holding exactly `bytes`; the same path every time for a name.
std::string scratch_file(std::string_view name, std::string_view bytes);

std::string_view as_text(const std::uint8_t* data, std::size_t size);

// Reads the fuzz input as a stream of choices, for the structured targets; past
// the end it yields zeros.
class Choices {
 public:
  Choices(const std::uint8_t* data, std::size_t size) : data_(data), size_(size) {}
  std::uint8_t byte();
  std::uint64_t below(std::uint64_t n);  // 0..n-1 (n >= 1)
  std::string bytes(std::size_t max_size);  // a length byte, then that many bytes
  std::size_t left() const { return size_ - pos_; }

 private:
  const std::uint8_t* data_;
  std::size_t size_;
  std::size_t pos_ = 0;
};

}  // namespace attend::fuzz
