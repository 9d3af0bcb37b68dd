// core/io/safetensors and core/io/file_io: round trips, files written by torch and by
// hand, the exact bytes we write, every rejection with its message, truncated and
// corrupted files, atomic writes; tools/cli/inspect.
#include <doctest/doctest.h>

#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <set>

#include "core/core.hpp"
#include "core/io/file_io.hpp"
#include "core/io/safetensors.hpp"
#include "tests/support/scratch.hpp"
#include "tools/cli/inspect.hpp"

using namespace attend;
namespace fs = std::filesystem;

namespace {

// A fresh directory, removed with everything in it at the end of the test.
struct TempDir : attend::testing::Scratch {
  TempDir() : Scratch("attend-test-safetensors") {}
  std::string file(const std::string& name) const { return (dir / name).string(); }
  std::set<std::string> listing() const {
    std::set<std::string> names;
    for (const auto& entry : fs::directory_iterator(dir)) names.insert(entry.path().filename().string());
    return names;
  }
};

// Plain (non-atomic, unsynced) write, for building bad files quickly.
void write_raw(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  REQUIRE(out.good());
}

std::string u64_le(std::uint64_t n) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  return s;
}

// [length][header][data], the header exactly as given (no padding added).
std::string file_bytes(const std::string& header, const std::string& data = "") {
  return u64_le(header.size()) + header + data;
}

std::string bytes_of(const Tensor& t) {
  return std::string(static_cast<const char*>(t.raw_data()), static_cast<std::size_t>(t.numel()) * dtype_size(t.dtype()));
}

// The error load_safetensors gives for the file made of these bytes.
std::string load_error(const TempDir& tmp, const std::string& bytes) {
  const std::string path = tmp.file("bad.safetensors");
  write_raw(path, bytes);
  try {
    load_safetensors(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "(loaded without error)";
}

// The message for the file bad.safetensors in tmp.
std::string expected(const TempDir& tmp, const std::string& problem) {
  return "load_safetensors: " + tmp.file("bad.safetensors") + ": " + problem;
}

}  // namespace

TEST_CASE("save -> load is bit-exact for F32 and F64, ranks 0 to 4, empty tensors and metadata") {
  TempDir tmp;
  Generator gen(42);
  std::map<std::string, Tensor> tensors;
  for (DType dtype : {Float32, Float64}) {
    const std::string d = dtype == Float32 ? "f32" : "f64";
    tensors[d + ".rank0"] = scalar(-0.0, dtype);
    tensors[d + ".rank1"] = normal({7}, 0, 1, gen, dtype);
    tensors[d + ".rank2"] = normal({3, 5}, 0, 1e3, gen, dtype);
    tensors[d + ".rank3"] = normal({2, 3, 4}, 0, 1e-30, gen, dtype);
    tensors[d + ".rank4"] = normal({2, 1, 3, 2}, 0, 1, gen, dtype);
    tensors[d + ".empty"] = zeros({0}, dtype);
    tensors[d + ".empty3"] = zeros({4, 0, 2}, dtype);
    Tensor special = tensors[d + ".rank1"];  // values that survive only a bit-exact copy
    special.set({0}, std::numeric_limits<double>::quiet_NaN());
    special.set({1}, -std::numeric_limits<double>::infinity());
    special.set({2}, std::numeric_limits<double>::denorm_min());
    special.set({3}, -0.0);
  }
  const std::map<std::string, std::string> metadata = {
      {"format", "pt"}, {"empty", ""}, {"", "empty key"}, {"unicode", "h\u00e9llo \u2713"}, {"quote\"s", "line\nbreak\t{}"}};
  const std::string path = tmp.file("model.safetensors");
  save_safetensors(path, tensors, metadata);

  const SafetensorsFile back = load_safetensors(path);
  CHECK(back.metadata == metadata);
  REQUIRE(back.tensors.size() == tensors.size());
  for (const auto& [name, t] : tensors) {
    CAPTURE(name);
    REQUIRE(back.tensors.count(name) == 1);
    const Tensor& u = back.tensors.at(name);
    CHECK(u.dtype() == t.dtype());
    CHECK(u.shape() == t.shape());
    CHECK(bytes_of(u) == bytes_of(t));
  }
  CHECK(std::signbit(back.tensors.at("f64.rank0").item()));

  // No tensors and no metadata is a valid file too.
  save_safetensors(path, {});
  CHECK(load_safetensors(path).tensors.empty());
  CHECK(load_safetensors(path).metadata.empty());
}

TEST_CASE("the bytes we write: length, sorted JSON header padded to 8, F64 data first, then F32") {
  TempDir tmp;
  const std::string path = tmp.file("small.safetensors");
  save_safetensors(path, {{"a", tensor({1.0}, Float32)}, {"b", tensor({2.0}, Float64)}}, {{"k", "v"}});
  const std::string header =
      R"({"__metadata__":{"k":"v"},"a":{"data_offsets":[8,12],"dtype":"F32","shape":[1]},)"
      R"("b":{"data_offsets":[0,8],"dtype":"F64","shape":[1]}})";
  REQUIRE(header.size() == 133);
  const std::string padded = header + "   ";  // 136 = 17 * 8
  // 2.0 as a little-endian double, 1.0f as a little-endian float
  const std::string data = std::string("\x00\x00\x00\x00\x00\x00\x00\x40", 8) + std::string("\x00\x00\x80\x3f", 4);
  CHECK(read_file(path) == u64_le(136) + padded + data);
}

TEST_CASE("a file built by hand, in the Python package's layout, loads with the right values") {
  TempDir tmp;
  // Metadata first, F64 before F32, header not padded: the reader must not care.
  const std::string header =
      R"({"__metadata__":{"format":"pt"},"b":{"dtype":"F64","shape":[2],"data_offsets":[0,16]},)"
      R"( "a" : {"dtype":"F32","shape":[1,2],"data_offsets":[16,24], "extra": "ignored"}})";
  const std::string data = std::string("\x00\x00\x00\x00\x00\x00\xf8\x3f", 8)    // 1.5
                           + std::string("\x00\x00\x00\x00\x00\x00\x00\xc0", 8)  // -2.0
                           + std::string("\x00\x00\x80\x3e", 4)                  // 0.25f
                           + std::string("\x00\x00\x40\xc0", 4);                 // -3.0f
  const std::string path = tmp.file("hand.safetensors");
  write_raw(path, file_bytes(header, data));
  const SafetensorsFile f = load_safetensors(path);
  CHECK(f.metadata == std::map<std::string, std::string>{{"format", "pt"}});
  REQUIRE(f.tensors.size() == 2);
  const Tensor& a = f.tensors.at("a");
  const Tensor& b = f.tensors.at("b");
  CHECK(a.dtype() == Float32);
  CHECK(a.shape() == Shape{1, 2});
  CHECK(a.to_vector() == std::vector<double>{0.25, -3.0});
  CHECK(b.dtype() == Float64);
  CHECK(b.shape() == Shape{2});
  CHECK(b.to_vector() == std::vector<double>{1.5, -2.0});
}

TEST_CASE("tests/data/interop.safetensors, written by torch (make_interop.py), loads with its values") {
  const SafetensorsFile f = load_safetensors(ATTEND_TEST_DATA "/interop.safetensors");
  CHECK(f.metadata == std::map<std::string, std::string>{
                          {"format", "pt"}, {"written_by", "make_interop.py"}, {"unicode", "h\u00e9llo \u2713"}});
  REQUIRE(f.tensors.size() == 5);

  const Tensor& w = f.tensors.at("encoder.weight");
  REQUIRE(w.dtype() == Float32);
  CHECK(w.shape() == Shape{2, 3});
  const float* pw = w.data<float>();
  const float want_w[] = {0.5f, -1.25f, 3.0f, 0.1f, -2.0f / 3.0f, 1e-3f};
  for (int i = 0; i < 6; ++i) CHECK(pw[i] == want_w[i]);

  const Tensor& bias = f.tensors.at("decoder.bias");
  REQUIRE(bias.dtype() == Float64);
  CHECK(bias.to_vector() == std::vector<double>{0.1, 1.0 / 3.0, -2.5e-300, 12345.678});

  const Tensor& step = f.tensors.at("step");
  CHECK(step.dtype() == Float64);
  CHECK(step.dim() == 0);
  CHECK(step.item() == 7.0);

  const Tensor& empty = f.tensors.at("empty");
  CHECK(empty.dtype() == Float32);
  CHECK(empty.shape() == Shape{0, 3});

  const Tensor& cube = f.tensors.at("cube");
  CHECK(cube.shape() == Shape{2, 3, 4});
  CHECK(cube.at({0, 0, 0}) == -11.5);
  CHECK(cube.at({1, 2, 3}) == 11.5);
  CHECK(cube.at({1, 0, 2}) == 14 - 11.5);
}

TEST_CASE("a zero dimension makes an empty tensor, however large the other dimensions") {
  TempDir tmp;
  const std::string path = tmp.file("empty.safetensors");
  for (const std::string shape : {"[0, 4611686018427387904, 4611686018427387904]", "[4611686018427387904, 4611686018427387904, 0]",
                                  "[9223372036854775807, 0, 9223372036854775807]"}) {
    CAPTURE(shape);
    write_raw(path, file_bytes(R"({"w": {"dtype": "F32", "shape": )" + shape + R"(, "data_offsets": [0, 0]}})"));
    const SafetensorsFile f = load_safetensors(path);
    const Tensor& w = f.tensors.at("w");
    CHECK(w.numel() == 0);
    CHECK(w.shape().str() == fmt::format("[{}]", shape.substr(1, shape.size() - 2)));
    save_safetensors(path, f.tensors);  // and it saves back as it came
    CHECK(load_safetensors(path).tensors.at("w").shape() == w.shape());
  }
}

TEST_CASE("files that are too short or whose header length is wrong are rejected") {
  TempDir tmp;
  CHECK(load_error(tmp, "") == expected(tmp, "the file has 0 bytes, too few for the 8-byte header length"));
  CHECK(load_error(tmp, std::string(7, '\0')) == expected(tmp, "the file has 7 bytes, too few for the 8-byte header length"));
  CHECK(load_error(tmp, u64_le(100) + "{}") ==
        expected(tmp, "the header length 100 runs past the end of the file (10 bytes)"));
  CHECK(load_error(tmp, u64_le(100'000'001) + "{}") ==
        expected(tmp, "the header length 100000001 is larger than the limit of 100000000 bytes (corrupt file?)"));
  CHECK(load_error(tmp, u64_le(~std::uint64_t{0}) + "{}") ==
        expected(tmp, "the header length 18446744073709551615 is larger than the limit of 100000000 bytes (corrupt file?)"));

  const std::string missing = tmp.file("missing.safetensors");
  CHECK_THROWS_WITH_AS(load_safetensors(missing),
                       ("load_safetensors: " + missing + ": cannot open: No such file or directory").c_str(), Error);
  CHECK_THROWS_WITH_AS(load_safetensors(tmp.dir.string()),
                       ("load_safetensors: " + tmp.dir.string() + ": not a regular file").c_str(), Error);
}

TEST_CASE("headers that are not a JSON object are rejected") {
  TempDir tmp;
  CHECK(load_error(tmp, file_bytes("")) ==
        expected(tmp, "the header is not valid JSON: parse error at line 1, column 1: syntax error while parsing "
                      "value - unexpected end of input; expected '[', '{', or a literal"));
  CHECK(load_error(tmp, file_bytes(R"({"w": )")) ==
        expected(tmp, "the header is not valid JSON: parse error at line 1, column 7: syntax error while parsing "
                      "value - unexpected end of input; expected '[', '{', or a literal"));
  CHECK(load_error(tmp, file_bytes("{\"w\xff\": 1}")) ==
        expected(tmp, "the header is not valid JSON: parse error at line 1, column 4: syntax error while parsing "
                      "object key - invalid string: ill-formed UTF-8 byte; last read: '\"w\\xff'; expected string literal"));
  CHECK(load_error(tmp, file_bytes("[1, 2]")) == expected(tmp, "the header is not a JSON object but array"));
  CHECK(load_error(tmp, file_bytes("\"text\"")) == expected(tmp, "the header is not a JSON object but string"));
  CHECK(load_error(tmp, file_bytes(R"({"w": {}, "w": {}})")) == expected(tmp, "the header names 'w' twice"));
}

TEST_CASE("tensor entries with a wrong dtype, shape or offsets are rejected, naming the tensor") {
  TempDir tmp;
  const std::string data16(16, '\0');
  auto entry = [&](const std::string& info) { return load_error(tmp, file_bytes(R"({"w": )" + info + "}", data16)); };

  CHECK(entry("[1]") == expected(tmp, "tensor 'w': the entry is not a JSON object but [1]"));
  CHECK(entry(R"({"shape": [4], "data_offsets": [0, 16]})") == expected(tmp, "tensor 'w' has no \"dtype\""));
  CHECK(entry(R"({"dtype": "F32", "data_offsets": [0, 16]})") == expected(tmp, "tensor 'w' has no \"shape\""));
  CHECK(entry(R"({"dtype": "F32", "shape": [4]})") == expected(tmp, "tensor 'w' has no \"data_offsets\""));
  CHECK(entry(R"({"dtype": 32, "shape": [4], "data_offsets": [0, 16]})") ==
        expected(tmp, "tensor 'w': \"dtype\" must be a string, got 32"));
  for (const char* dtype : {"F16", "BF16", "I64", "U8", "BOOL", "f32", "Q7"})
    CHECK(entry(fmt::format(R"({{"dtype": "{}", "shape": [4], "data_offsets": [0, 16]}})", dtype)) ==
          expected(tmp, fmt::format("tensor 'w' has unsupported dtype '{}' (attend reads F32, F64 and I8)", dtype)));

  CHECK(entry(R"({"dtype": "F32", "shape": [2, -2], "data_offsets": [0, 16]})") ==
        expected(tmp, "tensor 'w' has negative dimension -2 in its shape [2,-2]"));
  CHECK(entry(R"({"dtype": "F32", "shape": [4.0], "data_offsets": [0, 16]})") ==
        expected(tmp, "tensor 'w': \"shape\" must be an array of integers, got [4.0]"));
  CHECK(entry(R"({"dtype": "F32", "shape": 4, "data_offsets": [0, 16]})") ==
        expected(tmp, "tensor 'w': \"shape\" must be an array of integers, got 4"));
  CHECK(entry(R"({"dtype": "F32", "shape": [true], "data_offsets": [0, 16]})") ==
        expected(tmp, "tensor 'w': \"shape\" must be an array of integers, got [true]"));
  CHECK(entry(R"({"dtype": "F32", "shape": [1,1,1,1,1,1,4], "data_offsets": [0, 16]})") ==
        expected(tmp, "tensor 'w' has rank 7, more than attend's maximum rank 6"));
  CHECK(entry(R"({"dtype": "F32", "shape": [9223372036854775808], "data_offsets": [0, 16]})") ==
        expected(tmp, "tensor 'w' has a dimension too large in its shape [9223372036854775808]"));
  CHECK(entry(R"({"dtype": "F64", "shape": [4294967296, 4294967296, 2], "data_offsets": [0, 16]})") ==
        expected(tmp, "tensor 'w' has shape [4294967296, 4294967296, 2] with too many elements"));

  CHECK(entry(R"({"dtype": "F32", "shape": [4], "data_offsets": [0]})") ==
        expected(tmp, "tensor 'w': \"data_offsets\" must be two non-negative integers, got [0]"));
  CHECK(entry(R"({"dtype": "F32", "shape": [4], "data_offsets": [-16, 0]})") ==
        expected(tmp, "tensor 'w': \"data_offsets\" must be two non-negative integers, got [-16,0]"));
  CHECK(entry(R"({"dtype": "F32", "shape": [4], "data_offsets": [0, 16, 32]})") ==
        expected(tmp, "tensor 'w': \"data_offsets\" must be two non-negative integers, got [0,16,32]"));
  CHECK(entry(R"({"dtype": "F32", "shape": [4], "data_offsets": "0-16"})") ==
        expected(tmp, "tensor 'w': \"data_offsets\" must be two non-negative integers, got \"0-16\""));
  CHECK(entry(R"({"dtype": "F32", "shape": [0], "data_offsets": [16, 0]})") ==
        expected(tmp, "tensor 'w' has data_offsets [16, 0] that end before they begin"));
  CHECK(entry(R"({"dtype": "F32", "shape": [8], "data_offsets": [0, 32]})") ==
        expected(tmp, "tensor 'w' has data_offsets [0, 32] past the end of the data section (16 bytes; is the file truncated?)"));
  CHECK(entry(R"({"dtype": "F32", "shape": [0], "data_offsets": [18446744073709551615, 18446744073709551615]})") ==
        expected(tmp, "tensor 'w' has data_offsets [18446744073709551615, 18446744073709551615] past the end of the "
                      "data section (16 bytes; is the file truncated?)"));
  CHECK(load_error(tmp, file_bytes(R"({"w": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 12]}})", std::string(12, '\0'))) ==
        expected(tmp, "tensor 'w' has data_offsets [0, 12] but F32 [2, 2] needs 16 bytes"));
  CHECK(entry(R"({"dtype": "F64", "shape": [4], "data_offsets": [0, 16]})") ==
        expected(tmp, "tensor 'w' has data_offsets [0, 16] but F64 [4] needs 32 bytes"));
}

TEST_CASE("the tensors must cover the data section exactly: no overlap, no hole, nothing after") {
  TempDir tmp;
  auto layout = [&](const std::string& a, const std::string& b, std::size_t data_bytes) {
    return load_error(tmp, file_bytes(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": )" + a +
                                          R"(}, "b": {"dtype": "F32", "shape": [2], "data_offsets": )" + b + "}}",
                                      std::string(data_bytes, '\0')));
  };
  CHECK(layout("[0, 8]", "[4, 12]", 12) == expected(tmp, "tensors 'a' and 'b' overlap: data_offsets [0, 8] and [4, 12]"));
  CHECK(layout("[0, 8]", "[0, 8]", 8) == expected(tmp, "tensors 'a' and 'b' overlap: data_offsets [0, 8] and [0, 8]"));
  CHECK(layout("[0, 8]", "[12, 20]", 20) ==
        expected(tmp, "bytes [8, 12) of the data section belong to no tensor (before tensor 'b')"));
  CHECK(layout("[4, 12]", "[12, 20]", 20) ==
        expected(tmp, "bytes [0, 4) of the data section belong to no tensor (before tensor 'a')"));
  CHECK(layout("[0, 8]", "[8, 16]", 20) == expected(tmp, "the data section has 20 bytes but the tensors end at byte 16"));
  CHECK(layout("[8, 16]", "[0, 8]", 16) == "(loaded without error)");  // any order in the header is fine
}

TEST_CASE("metadata must be an object of strings") {
  TempDir tmp;
  CHECK(load_error(tmp, file_bytes(R"({"__metadata__": ["a"]})")) ==
        expected(tmp, "\"__metadata__\" must be an object of strings, got [\"a\"]"));
  CHECK(load_error(tmp, file_bytes(R"({"__metadata__": {"epoch": 3}})")) ==
        expected(tmp, "\"__metadata__\" value of 'epoch' must be a string, got 3"));
  CHECK(load_error(tmp, file_bytes(R"({"__metadata__": {"k": {"a": 1, "b": 2}}})")) ==
        expected(tmp, "\"__metadata__\" value of 'k' must be a string, got an object of size 2"));
}

TEST_CASE("hostile headers: deep nesting and long values give short messages, no stack overflow") {
  TempDir tmp;
  const std::string deep = std::string(200000, '[') + std::string(200000, ']');
  CHECK(load_error(tmp, file_bytes(deep)) == expected(tmp, "the header is not a JSON object but array"));
  CHECK(load_error(tmp, file_bytes(R"({"__metadata__": {"k": )" + deep + "}}")) ==
        expected(tmp, "\"__metadata__\" value of 'k' must be a string, got an array of size 1"));
  CHECK(load_error(tmp, file_bytes(R"({"w": )" + deep + "}")) ==
        expected(tmp, "tensor 'w': the entry is not a JSON object but an array of size 1"));
  CHECK(load_error(tmp, file_bytes(R"({"w": ")" + std::string(200, 'x') + "\"}")) ==
        expected(tmp, "tensor 'w': the entry is not a JSON object but \"" + std::string(76, 'x') + "..."));
}

TEST_CASE("every truncation of a valid file throws attend::Error, never crashes") {
  TempDir tmp;
  const std::string path = tmp.file("good.safetensors");
  Generator gen(7);
  save_safetensors(path,
                   {{"embed", normal({5, 3}, 0, 1, gen, Float32)},
                    {"step", scalar(3, Float64)},
                    {"empty", zeros({0, 2}, Float32)},
                    {"w", normal({2, 2}, 0, 1, gen, Float64)}},
                   {{"epoch", "3"}});
  const std::string whole = read_file(path);
  REQUIRE(load_safetensors(path).tensors.size() == 4);
  const std::string cut = tmp.file("bad.safetensors");
  for (std::size_t n = 0; n < whole.size(); ++n) {
    CAPTURE(n);
    write_raw(cut, whole.substr(0, n));
    CHECK_THROWS_AS(load_safetensors(cut), Error);
  }
  // A cut inside the data names the tensor that lost its bytes.
  const std::size_t data_start = whole.size() - (15 * 4 + 8 + 4 * 8);
  CHECK(load_error(tmp, whole.substr(0, whole.size() - 1)) ==
        expected(tmp, "tensor 'embed' has data_offsets [40, 100] past the end of the data section (99 bytes; is the "
                      "file truncated?)"));
  CHECK(load_error(tmp, whole.substr(0, data_start)) ==
        expected(tmp, "tensor 'embed' has data_offsets [40, 100] past the end of the data section (0 bytes; is the "
                      "file truncated?)"));
}

TEST_CASE("random byte flips in the header either load or throw attend::Error, never crash") {
  TempDir tmp;
  const std::string path = tmp.file("good.safetensors");
  Generator gen(11);
  save_safetensors(path, {{"a", normal({3, 4}, 0, 1, gen, Float32)}, {"b", normal({2}, 0, 1, gen, Float64)}},
                   {{"note", "x"}});
  const std::string whole = read_file(path);
  std::uint64_t header_end = 8;
  for (int i = 0; i < 8; ++i) header_end += static_cast<std::uint64_t>(static_cast<unsigned char>(whole[i])) << (8 * i);

  std::mt19937_64 rng(2024);
  int loaded = 0, rejected = 0;
  for (int trial = 0; trial < 300; ++trial) {
    std::string bytes = whole;
    const int flips = 1 + static_cast<int>(rng() % 3);
    for (int k = 0; k < flips; ++k) {
      const std::size_t at = rng() % header_end;  // the length field and the JSON text
      bytes[at] = static_cast<char>(bytes[at] ^ static_cast<char>(1 + rng() % 255));
    }
    write_raw(tmp.file("flip.safetensors"), bytes);
    try {
      const SafetensorsFile f = load_safetensors(tmp.file("flip.safetensors"));
      ++loaded;
      for (const auto& [name, t] : f.tensors) CHECK(t.numel() * static_cast<std::int64_t>(dtype_size(t.dtype())) <= static_cast<std::int64_t>(whole.size()));
    } catch (const Error&) {
      ++rejected;
    }
  }
  // Both outcomes occur (a flipped letter in a name or in metadata still loads), so the loop tested something.
  CHECK(loaded > 0);
  CHECK(rejected > 0);
  CHECK(loaded + rejected == 300);
}

TEST_CASE("save_safetensors rejects what it cannot write, and leaves the old file alone") {
  TempDir tmp;
  const std::string path = tmp.file("m.safetensors");
  save_safetensors(path, {{"w", ones({2})}});
  const std::string before = read_file(path);
  CHECK_THROWS_WITH_AS(save_safetensors(path, {{"__metadata__", ones({1})}}),
                       ("save_safetensors: " + path + ": a tensor cannot be named '__metadata__'").c_str(), Error);
  CHECK_THROWS_WITH_AS(save_safetensors(path, {{"w", Tensor()}}),
                       ("save_safetensors: " + path + ": tensor 'w' is undefined").c_str(), Error);
  CHECK_THROWS_WITH_AS(
      save_safetensors(path, {{"w\xff", ones({1})}}),
      ("save_safetensors: " + path + ": cannot encode the header: invalid UTF-8 byte at index 1: 0xFF").c_str(), Error);
  CHECK(read_file(path) == before);
  CHECK(tmp.listing() == std::set<std::string>{"m.safetensors"});
}

TEST_CASE("write_file_atomic: replaces whole files, leaves no temporary, keeps the old file when the writer fails") {
  TempDir tmp;
  const std::string path = tmp.file("config.json");
  write_file_atomic(path, "first");
  CHECK(read_file(path) == "first");
  write_file_atomic(path, "second, longer");
  CHECK(read_file(path) == "second, longer");
  write_file_atomic(path, "");
  CHECK(read_file(path) == "");
  CHECK(tmp.listing() == std::set<std::string>{"config.json"});

  // The writer throws midway: the old content stays and the temporary file is gone.
  write_file_atomic(path, "old");
  CHECK_THROWS_WITH_AS(write_file_atomic(path,
                                         [](const ByteSink& sink) {
                                           sink("half of the ");
                                           fail("disk full (simulated)");
                                         }),
                       "disk full (simulated)", Error);
  CHECK(read_file(path) == "old");
  CHECK(tmp.listing() == std::set<std::string>{"config.json"});

  // Streaming writes many pieces.
  write_file_atomic(path, [](const ByteSink& sink) {
    for (int i = 0; i < 1000; ++i) sink("0123456789");
  });
  CHECK(read_file(path).size() == 10000);

  // A directory that does not exist: nothing is created anywhere.
  const std::string nowhere = tmp.file("no/such/dir/model.safetensors");
  CHECK_THROWS_WITH_AS(
      save_safetensors(nowhere, {{"w", ones({1})}}),
      ("write: " + nowhere + ": cannot create a temporary file beside it: No such file or directory").c_str(),
      Error);
  // The target is a directory: refused before anything is created.
  fs::create_directories(tmp.dir / "adir");
  CHECK_THROWS_AS(write_file_atomic(tmp.file("adir"), "x"), Error);
  CHECK(tmp.listing() == std::set<std::string>{"config.json", "adir"});
  CHECK(fs::is_directory(tmp.dir / "adir"));

  const std::string missing = tmp.file("missing.txt");
  CHECK_THROWS_WITH_AS(read_file(missing), ("read_file: " + missing + ": cannot open: No such file or directory").c_str(),
                       Error);
}

TEST_CASE("attend inspect lists tensors, stats, metadata and totals") {
  TempDir tmp;
  const std::string path = tmp.file("model.safetensors");
  save_safetensors(path,
                   {{"decoder.weight", tensor({1, -2, 3, 6}, {2, 2}, Float32)},
                    {"bias", tensor({0.5, 1.5}, Float64)},
                    {"empty", zeros({0, 3})},
                    {"nan", tensor({1, std::nan("")}, Float32)}},
                   {{"epoch", "3"}, {"note", "two\nlines"}});
  const std::string want = path + "\n\n" +
      "name            dtype  shape        numel           min          mean           max\n"
      "-----------------------------------------------------------------------------------\n"
      "bias            F64    [2]              2           0.5             1           1.5\n"
      "decoder.weight  F32    [2, 2]           4            -2             2             6\n"
      "empty           F32    [0, 3]           0             -             -             -\n"
      "nan             F32    [2]              2           nan           nan           nan\n"
      "-----------------------------------------------------------------------------------\n"
      "\n"
      "metadata:\n"
      "  \"epoch\": \"3\"\n"
      "  \"note\": \"two\\nlines\"\n"
      "\n"
      "4 tensors, 8 parameters, 40 bytes of tensor data (" + std::to_string(fs::file_size(path)) + " bytes in the file)\n";
  CHECK(tools::inspect_safetensors(path) == want);

  save_safetensors(path, {});
  CHECK(tools::inspect_safetensors(path).find("metadata: none\n\n0 tensors, 0 parameters, 0 bytes of tensor data") !=
        std::string::npos);

  write_raw(tmp.file("bad.safetensors"), "short");
  CHECK_THROWS_WITH_AS(tools::inspect_safetensors(tmp.file("bad.safetensors")),
                       expected(tmp, "the file has 5 bytes, too few for the 8-byte header length").c_str(), Error);
}
