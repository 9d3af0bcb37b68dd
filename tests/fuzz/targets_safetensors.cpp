// safetensors: the reader on arbitrary bytes, and a structured round trip
// (tensors and metadata made from the input, saved, loaded, compared).
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/io/safetensors.hpp"
#include "tests/fuzz/targets.hpp"

namespace attend::fuzz {

namespace {

// Same names, dtypes, shapes and bytes (so NaNs compare by their bits), same metadata.
void check_same(const SafetensorsFile& a, const SafetensorsFile& b, std::string_view what) {
  if (a.metadata != b.metadata) finding(fmt::format("{}: the metadata differs", what));
  if (a.tensors.size() != b.tensors.size())
    finding(fmt::format("{}: {} tensors, then {}", what, a.tensors.size(), b.tensors.size()));
  if (a.int8.size() != b.int8.size()) finding(fmt::format("{}: {} int8 arrays, then {}", what, a.int8.size(), b.int8.size()));
  for (const auto& [name, q] : a.int8) {
    auto it = b.int8.find(name);
    if (it == b.int8.end()) finding(fmt::format("{}: int8 array '{}' is missing", what, name));
    if (!(q.shape == it->second.shape) || q.values != it->second.values)
      finding(fmt::format("{}: int8 array '{}' differs", what, name));
  }
  for (const auto& [name, t] : a.tensors) {
    auto it = b.tensors.find(name);
    if (it == b.tensors.end()) finding(fmt::format("{}: tensor '{}' is missing", what, name));
    const Tensor& u = it->second;
    if (!t.defined() || !u.defined()) finding(fmt::format("{}: tensor '{}' is undefined", what, name));
    if (t.dtype() != u.dtype() || !(t.shape() == u.shape()))
      finding(fmt::format("{}: tensor '{}' is {} {}, then {} {}", what, name, t.dtype(), t.shape().str(), u.dtype(),
                          u.shape().str()));
    const std::size_t bytes = static_cast<std::size_t>(t.numel()) * dtype_size(t.dtype());
    if (bytes > 0 && std::memcmp(t.raw_data(), u.raw_data(), bytes) != 0)
      finding(fmt::format("{}: the values of tensor '{}' differ", what, name));
  }
}

std::string scratch_path(std::string_view name) { return (std::filesystem::path(scratch_dir()) / name).string(); }

}  // namespace

int fuzz_safetensors(const std::uint8_t* data, std::size_t size) {
  SafetensorsFile loaded;
  try {
    loaded = load_safetensors(scratch_file("fuzz.safetensors", as_text(data, size)));
  } catch (const Error& e) {
    expected(e);
    return 0;
  }
  for (const auto& [name, t] : loaded.tensors)
    if (!t.defined() || t.numel() < 0) finding(fmt::format("tensor '{}' loaded undefined or with a bad shape", name));
  // Whatever loads saves and loads back the same.
  const std::string again = scratch_path("fuzz-again.safetensors");
  try {
    save_safetensors(again, loaded.tensors, loaded.metadata, loaded.int8);
  } catch (const Error& e) {
    expected(e);
    return 0;  // e.g. a name that is not valid UTF-8 (JSON \u escapes decode to such bytes)
  }
  check_same(loaded, load_safetensors(again), "saved after loading");
  return 0;
}

// The input chooses: the number of tensors, then for each a name, a dtype, a rank,
// the dimensions and the values' bytes; then metadata pairs.
int fuzz_roundtrip(const std::uint8_t* data, std::size_t size) {
  Choices in(data, size);
  SafetensorsFile original;
  const std::uint64_t count = in.below(6);
  for (std::uint64_t i = 0; i < count; ++i) {
    std::string name = in.bytes(12);
    const DType dtype = in.byte() % 2 == 0 ? Float32 : Float64;
    Shape shape;
    const int rank = static_cast<int>(in.below(kMaxRank + 1));
    for (int axis = 0; axis < rank; ++axis) shape.push_back(static_cast<std::int64_t>(in.below(4)));
    Tensor t = empty(shape, dtype);
    auto* bytes = static_cast<unsigned char*>(t.raw_data());
    for (std::size_t b = 0; b < static_cast<std::size_t>(t.numel()) * dtype_size(dtype); ++b) bytes[b] = in.byte();
    original.tensors[std::move(name)] = t;  // a repeated name replaces the earlier tensor
  }
  const std::uint64_t metadata = in.below(4);
  for (std::uint64_t i = 0; i < metadata; ++i) {
    std::string key = in.bytes(8);
    original.metadata[std::move(key)] = in.bytes(16);
  }
  const std::string path = scratch_path("roundtrip.safetensors");
  try {
    save_safetensors(path, original.tensors, original.metadata);
  } catch (const Error& e) {
    expected(e);
    return 0;  // a name or metadata that is not valid UTF-8, or the name __metadata__
  }
  SafetensorsFile loaded;
  try {
    loaded = load_safetensors(path);
  } catch (const Error& e) {
    finding(fmt::format("a file save_safetensors wrote does not load: {}", e.what()));
  }
  check_same(original, loaded, "round trip");
  return 0;
}

}  // namespace attend::fuzz
