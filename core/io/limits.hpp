#pragma once
// attend's resource limits, in one place. Every input (a file, a flag, a line
// of text) is checked against these before anything is allocated for it, so
// that a hostile or mistaken input gives a clear attend::Error instead of
// exhausting memory, hanging or crashing. They are far above what the models
// attend is built for (small seq2seq models on CPUs) and far below what would
// take a machine down. To change one, edit it here and rebuild; the messages
// that enforce them name the limit and this file.
#include <cstdint>
#include <string>

namespace attend::limits {

// ---- tensors and files
// The tensor data one safetensors file may hold (also capped at the machine's
// physical memory): a header claiming [2^40] floats in a sparse file is refused
// before anything is allocated.
inline constexpr std::uint64_t kMaxTensorBytes = std::uint64_t{16} << 30;  // 16 GiB
// Text files read whole (corpora, vocabularies, config.json, .mo catalogs).
inline constexpr std::uint64_t kMaxTextFileBytes = std::uint64_t{2} << 30;  // 2 GiB
// A .mo catalog's strings may add up to at most this many times the file's size
// (strings shared between entries could otherwise make a 1.6 MB file need 40 GB).
inline constexpr std::uint64_t kMaxMoExpansion = 4;

// ---- models (Seq2SeqConfig::validate)
inline constexpr std::int64_t kMaxDimension = 65536;       // embed, hidden
inline constexpr std::int64_t kMaxLayers = 64;             // encoder LSTM layers
inline constexpr std::int64_t kMaxVocabulary = 1 << 24;    // tokens per vocabulary (16.7 M)
inline constexpr std::int64_t kMaxParameters = 1LL << 28;  // 268 M: 1 GiB of float32, 4 with Adam's state

// ---- inputs and flags
inline constexpr std::int64_t kMaxLineBytes = 65536;  // one sentence given to translate, eval or train
inline constexpr std::int64_t kMaxBeam = 256;         // --beam
inline constexpr std::int64_t kMaxEnsemble = 32;      // models decoding together (translate --model A --model B ...)
inline constexpr std::int64_t kMaxAverage = 256;      // model directories `attend average` reads
inline constexpr int kMaxThreads = 256;               // --threads
inline constexpr std::int64_t kMaxBatch = 65536;      // --batch (sentences)
inline constexpr std::int64_t kMaxSequence = 100000;  // bench --src-len / --tgt-len (tokens)
// The memory decoding one sentence may take (decode_memory_bytes in
// models/decode/decoding.hpp), and the most `attend translate` holds at once:
// it grows with the square of the sentence's length (an attention row over
// the source for every output token), so a line within kMaxLineBytes can need
// far more. Also capped at half the machine's physical memory (decode_memory_limit).
inline constexpr std::uint64_t kMaxDecodeBytes = std::uint64_t{2} << 30;  // 2 GiB

// The file's bytes, after checking it is a regular file (not a FIFO, a device
// or a directory) of at most max_bytes. Errors: "OP: PATH: ...".
std::string read_bounded_file(const std::string& path, const std::string& op,
                              std::uint64_t max_bytes = kMaxTextFileBytes);

// The machine's physical memory in bytes (0 if unknown).
std::uint64_t physical_memory();

// kMaxDecodeBytes, or half the physical memory when that is less; for tests,
// lower still when the environment's ATTEND_DECODE_MEMORY_LIMIT (bytes) says so.
std::uint64_t decode_memory_limit();

// "2 GiB", "65536 bytes": a size for a message.
std::string bytes_text(std::uint64_t bytes);

}  // namespace attend::limits
