// core/io/safetensors: I8 arrays (the weights of int8 models) beside F32 and F64
// tensors: the bytes written, round trips, a file in the Python package's
// layout, and what is refused.
#include <doctest/doctest.h>

#include <string>

#include "core/core.hpp"
#include "core/io/file_io.hpp"
#include "core/io/safetensors.hpp"
#include "tests/support/scratch.hpp"
#include "tools/cli/inspect.hpp"

using namespace attend;

namespace {

std::string u64_le(std::uint64_t n) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  return s;
}

std::string save_error(const std::string& path, const std::map<std::string, Tensor>& tensors,
                       const std::map<std::string, Int8Array>& int8) {
  try {
    save_safetensors(path, tensors, {}, int8);
  } catch (const Error& e) {
    return e.what();
  }
  return "(saved without error)";
}

}  // namespace

TEST_CASE("I8 arrays are written after F32, by name, and read back bit-exact") {
  attend::testing::Scratch tmp("attend-test-safetensors-int8");
  const std::string path = (tmp.dir / "q.safetensors").string();
  const std::map<std::string, Int8Array> int8 = {{"q", {Shape{2, 2}, {-127, 0, 5, 127}}}, {"e", {Shape{0, 3}, {}}}};
  save_safetensors(path, {{"s", tensor({0.5}, Float32)}}, {{"k", "v"}}, int8);
  const std::string header =
      R"({"__metadata__":{"k":"v"},"e":{"data_offsets":[4,4],"dtype":"I8","shape":[0,3]},)"
      R"("q":{"data_offsets":[4,8],"dtype":"I8","shape":[2,2]},"s":{"data_offsets":[0,4],"dtype":"F32","shape":[1]}})";
  std::string padded = header;
  padded.append((8 - padded.size() % 8) % 8, ' ');
  const std::string data = std::string("\x00\x00\x00\x3f", 4) + std::string("\x81\x00\x05\x7f", 4);
  CHECK(read_file(path) == u64_le(padded.size()) + padded + data);

  const SafetensorsFile f = load_safetensors(path);
  REQUIRE(f.int8.size() == 2);
  CHECK(f.int8.at("q").shape == Shape{2, 2});
  CHECK(f.int8.at("q").values == std::vector<std::int8_t>{-127, 0, 5, 127});
  CHECK(f.int8.at("e").values.empty());
  REQUIRE(f.tensors.size() == 1);
  CHECK(f.tensors.at("s").to_vector() == std::vector<double>{0.5});
  CHECK(f.metadata.at("k") == "v");
}

TEST_CASE("an I8 tensor in the Python package's layout (data first, header unpadded) loads") {
  attend::testing::Scratch tmp("attend-test-safetensors-int8");
  const std::string path = (tmp.dir / "py.safetensors").string();
  const std::string header = R"({"w":{"dtype":"I8","shape":[3],"data_offsets":[0,3]}})";
  write_file_atomic(path, [&](const ByteSink& sink) {
    sink(u64_le(header.size()));
    sink(header);
    sink(std::string("\xff\x80\x01", 3));
  });
  const SafetensorsFile f = load_safetensors(path);
  CHECK(f.int8.at("w").values == std::vector<std::int8_t>{-1, -128, 1});
  CHECK(f.tensors.empty());
}

TEST_CASE("save_safetensors refuses a name in both maps and an array whose values do not fill its shape") {
  attend::testing::Scratch tmp("attend-test-safetensors-int8");
  const std::string path = (tmp.dir / "bad.safetensors").string();
  CHECK(save_error(path, {{"w", tensor({1.0}, Float32)}}, {{"w", {Shape{1}, {1}}}}) ==
        "save_safetensors: " + path + ": 'w' is both a tensor and an int8 array");
  CHECK(save_error(path, {}, {{"w", {Shape{2, 2}, {1, 2, 3}}}}) ==
        "save_safetensors: " + path + ": int8 array 'w' has 3 values for its shape [2, 2]");
  CHECK(save_error(path, {}, {{"__metadata__", {Shape{1}, {1}}}}) ==
        "save_safetensors: " + path + ": an array cannot be named '__metadata__'");
  CHECK(!std::filesystem::exists(path));
}

TEST_CASE("attend inspect lists I8 arrays with their values' stats and one byte each") {
  attend::testing::Scratch tmp("attend-test-safetensors-int8");
  const std::string path = (tmp.dir / "q.safetensors").string();
  save_safetensors(path, {{"w.scale", tensor({0.5, 0.25}, Float32)}}, {}, {{"w", {Shape{2, 2}, {-127, 1, 3, 127}}}});
  const std::string listing = tools::inspect_safetensors(path);
  CHECK(listing.find("w        I8     [2, 2]           4          -127             1           127\n") != std::string::npos);
  CHECK(listing.find("w.scale  F32    [2]              2          0.25         0.375           0.5\n") != std::string::npos);
  CHECK(listing.find("2 tensors, 6 parameters, 12 bytes of tensor data") != std::string::npos);
}
