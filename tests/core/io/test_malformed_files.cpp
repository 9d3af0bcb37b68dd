// The malformed-file catalogue: every class of broken safetensors and .mo file,
// built byte by byte in code, must be refused with an attend::Error whose
// message names the file and the problem, and nothing may be allocated for a
// size that the file only claims. (A valid file of each kind loads, so the
// builders are known to be right.)
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/io/limits.hpp"
#include "core/io/safetensors.hpp"
#include "models/data/gettext.hpp"
#include "tests/support/scratch.hpp"

using namespace attend;
using namespace std::string_literals;
namespace fs = std::filesystem;

namespace {

struct TempDir : attend::testing::Scratch {
  TempDir() : Scratch("attend-test-malformed") {}
};

// ---------------------------------------------------------------- safetensors

std::string u64_le(std::uint64_t v) {
  std::string out;
  for (int i = 0; i < 8; ++i) out += static_cast<char>((v >> (8 * i)) & 0xFF);
  return out;
}

// [8-byte length][header][data]: the header is taken as given, unpadded.
std::string safetensors(const std::string& header, const std::string& data = "") {
  return u64_le(header.size()) + header + data;
}

// The message load_safetensors gives for `bytes` (written to NAME), or "" if it loads.
std::string refusal(const TempDir& tmp, const std::string& bytes, const std::string& name = "bad.safetensors") {
  const std::string path = tmp.write(name, bytes);
  try {
    load_safetensors(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

struct Case {
  const char* what;
  std::string bytes;
  std::string problem;  // a part of the message that names the problem
};

const std::string w16 = R"("w": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]})";

std::vector<Case> safetensors_cases() {
  const std::string data16(16, '\0');
  return {
      {"an empty file", "", "the file has 0 bytes, too few for the 8-byte header length"},
      {"a truncated header length", "\x10\0\0"s, "the file has 3 bytes, too few for the 8-byte header length"},
      {"a header length past the end", u64_le(100) + "{}", "the header length 100 runs past the end of the file (10 bytes)"},
      {"a header length over the limit", u64_le(std::uint64_t{1} << 40) + "{}", "is larger than the limit of"},
      {"a header that is not JSON", safetensors("{not json"), "the header is not valid JSON"},
      {"a header that is not an object", safetensors("[1, 2]"), "the header is not a JSON object but array"},
      {"invalid UTF-8 in the header", safetensors("{\"w\xff\": {}}"), "the header is not valid JSON"},
      {"a NUL hiding content", safetensors("{}\0{\"x\": 1}"s), "the header has a NUL byte at offset 2"},
      {"a byte order mark", safetensors("\xEF\xBB\xBF{}"), "the header starts with a byte order mark"},
      {"a duplicate tensor name", safetensors("{" + w16 + ", " + w16 + "}", data16), "the header names 'w' twice"},
      {"a duplicate metadata key",
       safetensors(R"({"__metadata__": {"k": "a", "k": "b"}})"), "the header's entry '__metadata__' has the key 'k' twice"},
      {"a duplicate field in an entry",
       safetensors(R"({"w": {"dtype": "F32", "dtype": "F64", "shape": [2, 2], "data_offsets": [0, 16]}})", data16),
       "the header's entry 'w' has the key 'dtype' twice"},
      {"an entry that is not an object", safetensors(R"({"w": 3})"), "tensor 'w': the entry is not a JSON object but 3"},
      {"an unsupported dtype",
       safetensors(R"({"w": {"dtype": "I16", "shape": [1], "data_offsets": [0, 2]}})", "ab"),
       "tensor 'w' has unsupported dtype 'I16' (attend reads F32, F64 and I8)"},
      {"an I8 array whose offsets do not fit its shape",
       safetensors(R"({"w": {"dtype": "I8", "shape": [3], "data_offsets": [0, 2]}})", "ab"),
       "tensor 'w' has data_offsets [0, 2] but I8 [3] needs 3 bytes"},
      {"a dtype that is not a string",
       safetensors(R"({"w": {"dtype": 32, "shape": [2], "data_offsets": [0, 8]}})", "12345678"),
       "tensor 'w': \"dtype\" must be a string, got 32"},
      {"a missing shape", safetensors(R"({"w": {"dtype": "F32", "data_offsets": [0, 4]}})", "1234"),
       "tensor 'w' has no \"shape\""},
      {"a shape that is not an array",
       safetensors(R"({"w": {"dtype": "F32", "shape": 4, "data_offsets": [0, 16]}})", data16),
       "tensor 'w': \"shape\" must be an array of integers, got 4"},
      {"a fractional dimension",
       safetensors(R"({"w": {"dtype": "F32", "shape": [2.5], "data_offsets": [0, 10]}})", data16.substr(0, 10)),
       "\"shape\" must be an array of integers, got [2.5]"},
      {"a negative dimension",
       safetensors(R"({"w": {"dtype": "F32", "shape": [-4], "data_offsets": [0, 16]}})", data16),
       "tensor 'w' has negative dimension -4"},
      {"a rank above 6",
       safetensors(R"({"w": {"dtype": "F32", "shape": [1,1,1,1,1,1,1], "data_offsets": [0, 4]}})", "1234"),
       "tensor 'w' has rank 7, more than attend's maximum rank 6"},
      {"a shape whose product overflows",
       safetensors(R"({"w": {"dtype": "F64", "shape": [4294967296, 4294967296, 2], "data_offsets": [0, 16]}})", data16),
       "tensor 'w' has shape [4294967296, 4294967296, 2] with too many elements"},
      {"a shape whose zero dimension comes after two that overflow together holds 0 elements, not 4 bytes",
       safetensors(R"({"w": {"dtype": "F32", "shape": [4611686018427387904, 4611686018427387904, 0],)"
                   R"( "data_offsets": [0, 4]}})", "1234"),
       "tensor 'w' has data_offsets [0, 4] but F32 [4611686018427387904, 4611686018427387904, 0] needs 0 bytes"},
      {"offsets that do not match the shape",
       safetensors(R"({"w": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 12]}})", data16.substr(0, 12)),
       "tensor 'w' has data_offsets [0, 12] but F32 [2, 2] needs 16 bytes"},
      {"offsets that end before they begin",
       safetensors(R"({"w": {"dtype": "F32", "shape": [1], "data_offsets": [8, 4]}})", data16),
       "tensor 'w' has data_offsets [8, 4] that end before they begin"},
      {"offsets past the end of the data",
       safetensors(R"({"w": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]}})", "12345678"),
       "past the end of the data section (8 bytes; is the file truncated?)"},
      {"offsets that are not two integers",
       safetensors(R"({"w": {"dtype": "F32", "shape": [1], "data_offsets": [0]}})", "1234"),
       "\"data_offsets\" must be two non-negative integers, got [0]"},
      {"negative offsets",
       safetensors(R"({"w": {"dtype": "F32", "shape": [1], "data_offsets": [-4, 0]}})", "1234"),
       "\"data_offsets\" must be two non-negative integers"},
      {"overlapping tensors",
       safetensors(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},)"
                   R"( "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}})",
                   data16.substr(0, 12)),
       "tensors 'a' and 'b' overlap"},
      {"a hole between tensors",
       safetensors(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},)"
                   R"( "b": {"dtype": "F32", "shape": [1], "data_offsets": [8, 12]}})",
                   data16.substr(0, 12)),
       "bytes [4, 8) of the data section belong to no tensor (before tensor 'b')"},
      {"bytes after the last tensor",
       safetensors(R"({"w": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}})", "12345678"),
       "the data section has 8 bytes but the tensors end at byte 4"},
      {"metadata that is not an object", safetensors(R"({"__metadata__": ["a"]})"),
       "\"__metadata__\" must be an object of strings"},
      {"a metadata value that is not a string", safetensors(R"({"__metadata__": {"step": 3}})"),
       "\"__metadata__\" value of 'step' must be a string, got 3"},
      {"a tensor name with a terminal escape",
       safetensors("{\"\\u001b[2J\": {\"dtype\": \"U8\", \"shape\": [1], \"data_offsets\": [0, 1]}}", "x"),
       "tensor '\\x1b[2J' has unsupported dtype"},
  };
}

TEST_CASE("malformed safetensors: every class is refused, naming the file and the problem") {
  TempDir tmp;
  // The builder makes valid files too.
  const std::string good = tmp.write("good.safetensors", safetensors("{" + w16 + "}", std::string(16, '\0')));
  CHECK(load_safetensors(good).tensors.at("w").shape() == Shape{2, 2});
  for (const Case& c : safetensors_cases()) {
    CAPTURE(std::string(c.what));
    const std::string message = refusal(tmp, c.bytes);
    const std::string prefix = "load_safetensors: " + (tmp.dir / "bad.safetensors").string() + ": ";
    CHECK_MESSAGE(message.starts_with(prefix), message);
    CHECK_MESSAGE(message.find(c.problem) != std::string::npos, message);
    CHECK_MESSAGE(message.find('\x1b') == std::string::npos, message);  // never a raw terminal escape
  }
}

TEST_CASE("malformed safetensors: a sparse file claiming terabytes is refused before allocating") {
  TempDir tmp;
  // A valid header for [2^40] float32 (4 TiB), and a file that is that long but
  // sparse: a few bytes on disk. The offsets agree with the file size, so only
  // the limit on tensor bytes stands between it and a 4 TiB allocation.
  const std::uint64_t bytes = std::uint64_t{4} << 40;
  const std::string header =
      R"({"w": {"dtype": "F32", "shape": [1099511627776], "data_offsets": [0, )" + std::to_string(bytes) + "]}}";
  const std::string path = tmp.write("sparse.safetensors", safetensors(header));
  if (::truncate(path.c_str(), static_cast<off_t>(8 + header.size() + bytes)) != 0) {
    MESSAGE("this file system cannot hold a 4 TiB sparse file; the case is skipped");
    return;
  }
  CHECK_THROWS_WITH_AS(load_safetensors(path),
                       ("load_safetensors: " + path + ": the tensors hold 4398046511104 bytes, more than the limit of " +
                        limits::bytes_text(limits::kMaxTensorBytes) + " (core/io/limits.hpp)")
                           .c_str(),
                       Error);
}

TEST_CASE("malformed safetensors: a directory and a FIFO are not regular files") {
  TempDir tmp;
  CHECK_THROWS_WITH_AS(load_safetensors(tmp.dir.string()),
                       ("load_safetensors: " + tmp.dir.string() + ": not a regular file").c_str(), Error);
  const std::string fifo = (tmp.dir / "fifo").string();
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  // Opening a FIFO for reading waits for a writer: this must not block.
  CHECK_THROWS_WITH_AS(load_safetensors(fifo), ("load_safetensors: " + fifo + ": not a regular file").c_str(), Error);
}

// ---------------------------------------------------------------- .mo catalogs

void put_u32(std::string& out, std::size_t at, std::uint32_t v, bool big_endian) {
  if (out.size() < at + 4) out.resize(at + 4, '\0');
  for (int k = 0; k < 4; ++k) out[at + k] = static_cast<char>((v >> (big_endian ? 8 * (3 - k) : 8 * k)) & 0xFF);
}

// A catalog laid out as msgfmt does: 28-byte header, the two tables, then the
// strings with their NULs. Offsets of the tables and of string i are known to
// the cases below: originals at 28, translations at 28 + 8n.
std::string mo_file(const std::vector<std::pair<std::string, std::string>>& entries, bool big_endian) {
  const auto n = static_cast<std::uint32_t>(entries.size());
  std::string out;
  put_u32(out, 0, 0x950412de, big_endian);
  put_u32(out, 4, 0, big_endian);
  put_u32(out, 8, n, big_endian);
  put_u32(out, 12, 28, big_endian);
  put_u32(out, 16, 28 + 8 * n, big_endian);
  put_u32(out, 20, 0, big_endian);
  put_u32(out, 24, 0, big_endian);
  std::string strings;
  const std::uint32_t base = 28 + 16 * n;
  for (int side = 0; side < 2; ++side)
    for (std::uint32_t i = 0; i < n; ++i) {
      const std::string& s = side == 0 ? entries[i].first : entries[i].second;
      const std::uint32_t table = side == 0 ? 28 : 28 + 8 * n;
      put_u32(out, table + 8 * i, static_cast<std::uint32_t>(s.size()), big_endian);
      put_u32(out, table + 8 * i + 4, base + static_cast<std::uint32_t>(strings.size()), big_endian);
      strings += s + '\0';
    }
  return out + strings;
}

struct MoCase {
  const char* what;
  std::string bytes;
  std::string problem;
};

std::vector<MoCase> mo_cases(bool be) {
  const std::vector<std::pair<std::string, std::string>> two = {{"Open", "Ouvrir"}, {"Save", "Enregistrer"}};
  const std::string good = mo_file(two, be);
  auto patched = [&](std::size_t at, std::uint32_t v) {
    std::string out = good;
    put_u32(out, at, v, be);
    return out;
  };
  const std::uint32_t tables_end = 28 + 16 * 2;  // where the strings start
  std::string no_nul = good;
  no_nul[tables_end + 4] = 'X';  // the NUL after "Open"
  std::string overlapping = patched(28 + 8, 3);  // original string 1 becomes "pen", inside "Open"
  put_u32(overlapping, 28 + 8 + 4, tables_end + 1, be);
  return {
      {"a file shorter than the header", good.substr(0, 12), "12 bytes is too short for a .mo header (20 bytes)"},
      {"a wrong magic number", "not a catalog, but long enough"s, "not a .mo file (magic number 0x20746f6e)"},
      {"an unsupported revision", patched(4, 2u << 16), "unsupported major revision 2"},
      {"a count past the end", patched(8, 1000000), "the table of original strings (1000000 entries at offset 28) runs "
                                                    "past the end of the file"},
      {"a table offset past the end", patched(16, 0xFFFFFF00u), "the table of translations (2 entries at offset"},
      {"a string offset past the end", patched(28 + 4, 0xFFFFFFF0u), "original string 0 (offset 4294967280, length 4) "
                                                                     "runs past the end of the file"},
      {"a string length past the end", patched(28 + 8, 0x7FFFFFFFu), "original string 1 (offset"},
      {"a string without its NUL", no_nul, "original string 0 (offset 60, length 4) is not followed by a NUL byte"},
      {"two overlapping strings", overlapping, "original string 1 (bytes 61 to 64) overlaps original string 0"},
  };
}

std::string mo_refusal(const TempDir& tmp, const std::string& bytes) {
  const std::string path = tmp.write("bad.mo", bytes);
  try {
    read_mo(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST_CASE("malformed .mo catalogs: every class is refused in both byte orders, naming the file and the problem") {
  TempDir tmp;
  for (bool be : {false, true}) {
    CAPTURE(be);
    const std::vector<std::pair<std::string, std::string>> two = {{"Open", "Ouvrir"}, {"Save", "Enregistrer"}};
    const std::vector<MoEntry> back = read_mo(tmp.write("good.mo", mo_file(two, be)));
    REQUIRE(back.size() == 2);
    CHECK(back[1].msgstr == "Enregistrer");
    for (const MoCase& c : mo_cases(be)) {
      CAPTURE(std::string(c.what));
      const std::string message = mo_refusal(tmp, c.bytes);
      CHECK_MESSAGE(message.starts_with("read_mo: " + (tmp.dir / "bad.mo").string() + ": "), message);
      CHECK_MESSAGE(message.find(c.problem) != std::string::npos, message);
    }
  }
}

TEST_CASE("malformed .mo catalogs: entries sharing one long string are refused before anything is copied") {
  // The reported file: 40,000 entries all pointing at one 500 KB string, 1.6 MB
  // on disk, 40 GB once every entry is copied out.
  const std::uint32_t n = 40000;
  std::string bytes;
  put_u32(bytes, 0, 0x950412de, false);
  put_u32(bytes, 8, n, false);
  put_u32(bytes, 12, 28, false);
  put_u32(bytes, 16, 28 + 8 * n, false);
  const std::uint32_t string_at = 28 + 16 * n, length = 500000;
  for (std::uint32_t i = 0; i < 2 * n; ++i) {
    put_u32(bytes, 28 + 8 * i, length, false);
    put_u32(bytes, 28 + 8 * i + 4, string_at, false);
  }
  bytes += std::string(length, 'a') + '\0';
  CHECK_THROWS_WITH_AS(parse_mo(bytes, "shared.mo"),
                       "read_mo: shared.mo: the 40000 entries' strings add up to 40000000000 bytes, more than 4 times "
                       "the file's 1140029 bytes (entries sharing their strings; the limit is in core/io/limits.hpp)",
                       Error);
}

TEST_CASE("malformed .mo catalogs: text that is not UTF-8 is read as bytes and left out of the pairs") {
  // A catalog may declare another charset, so read_mo keeps the bytes; no
  // sentence pair is made of them (the tokenizer and the vocabularies need UTF-8).
  for (bool be : {false, true}) {
    const std::string bytes = mo_file({{"Open", "Ouvrir"}, {"Close", "Fermer \xff"}}, be);
    const std::vector<MoEntry> entries = parse_mo(bytes, "latin.mo");
    REQUIRE(entries.size() == 2);
    CHECK(std::string(rejection_reason(entries[1].msgid, entries[1].msgstr)) == "invalid UTF-8");
    CHECK(extract_pairs(entries) == std::vector<SentencePair>{{"Open", "Ouvrir"}});
  }
}

TEST_CASE("malformed .mo catalogs: a directory, a FIFO and a missing file are refused by name") {
  TempDir tmp;
  CHECK_THROWS_WITH_AS(read_mo(tmp.dir.string()), ("read_mo: " + tmp.dir.string() + ": not a regular file").c_str(), Error);
  const std::string fifo = (tmp.dir / "fifo.mo").string();
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  CHECK_THROWS_WITH_AS(read_mo(fifo), ("read_mo: " + fifo + ": not a regular file").c_str(), Error);
  const std::string missing = (tmp.dir / "missing.mo").string();
  CHECK_THROWS_WITH_AS(read_mo(missing), ("read_mo: " + missing + ": cannot open: No such file or directory").c_str(),
                       Error);
}

}  // namespace
