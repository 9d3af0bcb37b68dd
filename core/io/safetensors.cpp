#include "core/io/safetensors.hpp"

#include <algorithm>
#include <bit>
#include <limits>
#include <set>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/io/file_io.hpp"
#include "core/io/limits.hpp"
#include "core/io/printable.hpp"

namespace attend {

// Tensor bytes go to and from the file as they sit in memory; that is the
// file's little-endian layout only on a little-endian host.
static_assert(std::endian::native == std::endian::little,
              "safetensors.cpp copies tensor memory as little-endian data; add byte swapping for this host");

namespace {

using json = nlohmann::json;

std::string_view code_of(DType dtype) { return dtype == Float64 ? "F64" : "F32"; }

// nlohmann's message without its "[json.exception.parse_error.101] " tag, with
// the bytes it quotes from a corrupt header made printable ("\xff").
std::string json_reason(const json::exception& e) {
  std::string_view what = e.what();
  if (auto close = what.find("] "); close != std::string_view::npos) what.remove_prefix(close + 2);
  std::string out;
  for (char c : what) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte >= 0x20 && byte < 0x7f) out += c;
    else out += fmt::format("\\x{:02x}", byte);
  }
  return out;
}

// ---------------------------------------------------------------- writing

void save_header_checks(const std::string& path, const std::map<std::string, Tensor>& tensors,
                        const std::map<std::string, Int8Array>& int8) {
  for (const auto& [name, t] : tensors) {
    if (name == "__metadata__") fail("save_safetensors: {}: a tensor cannot be named '__metadata__'", path);
    if (!t.defined()) fail("save_safetensors: {}: tensor '{}' is undefined", path, name);
    if (int8.count(name) != 0) fail("save_safetensors: {}: '{}' is both a tensor and an int8 array", path, name);
  }
  for (const auto& [name, a] : int8) {
    if (name == "__metadata__") fail("save_safetensors: {}: an array cannot be named '__metadata__'", path);
    if (static_cast<std::int64_t>(a.values.size()) != a.shape.numel())
      fail("save_safetensors: {}: int8 array '{}' has {} values for its shape {}", path, name, a.values.size(), a.shape);
  }
}

// One tensor's bytes, where save_safetensors lays them out.
struct Block {
  const std::string* name;
  std::string_view code;  // F64, F32, I8
  const Shape* shape;
  std::string_view bytes;
};

// F64 first, then F32, each by name, then I8 by name.
std::vector<Block> data_blocks(const std::map<std::string, Tensor>& tensors, const std::map<std::string, Int8Array>& int8) {
  std::vector<Block> order;
  const auto bytes_of = [](const Tensor& t) {
    return std::string_view(static_cast<const char*>(t.raw_data()),
                            static_cast<std::size_t>(t.numel()) * dtype_size(t.dtype()));
  };
  for (const auto& [name, t] : tensors) order.push_back({&name, code_of(t.dtype()), &t.shape(), bytes_of(t)});
  std::stable_partition(order.begin(), order.end(), [](const Block& b) { return b.code == "F64"; });
  for (const auto& [name, a] : int8)
    order.push_back({&name, "I8", &a.shape,
                     std::string_view(reinterpret_cast<const char*>(a.values.data()), a.values.size())});
  return order;
}

}  // namespace

void save_safetensors(const std::string& path, const std::map<std::string, Tensor>& tensors,
                      const std::map<std::string, std::string>& metadata, const std::map<std::string, Int8Array>& int8) {
  save_header_checks(path, tensors, int8);
  // Wider elements first: every tensor then starts at a multiple of its element
  // size (the header is padded to 8 bytes), as in the Python package.
  const std::vector<Block> order = data_blocks(tensors, int8);

  json header = json::object();
  std::uint64_t offset = 0;
  for (const Block& b : order) {
    header[*b.name] = {{"dtype", b.code},
                       {"shape", std::vector<std::int64_t>(b.shape->begin(), b.shape->end())},
                       {"data_offsets", {offset, offset + b.bytes.size()}}};
    offset += b.bytes.size();
  }
  if (!metadata.empty()) header["__metadata__"] = metadata;

  std::string text;
  try {
    text = header.dump();
  } catch (const json::exception& e) {  // a name or value that is not valid UTF-8
    fail("save_safetensors: {}: cannot encode the header: {}", path, json_reason(e));
  }
  text.append((8 - text.size() % 8) % 8, ' ');  // keeps the data section 8-byte aligned

  char length[8];
  for (int i = 0; i < 8; ++i) length[i] = static_cast<char>((text.size() >> (8 * i)) & 0xff);

  write_file_atomic(path, [&](const ByteSink& sink) {
    sink(std::string_view(length, 8));
    sink(text);
    for (const Block& b : order)
      if (!b.bytes.empty()) sink(b.bytes);
  });
}

// ---------------------------------------------------------------- reading

namespace {

// "load_safetensors: PATH: problem"
template <class... Args>
[[noreturn]] void bad(const std::string& path, fmt::format_string<Args...> format, Args&&... args) {
  fail("load_safetensors: {}: {}", path, fmt::format(format, std::forward<Args>(args)...));
}

// A JSON value for an error message: short, and never a recursive dump of a
// hostile nesting ([[[[...]]]] a million deep would overflow the stack).
std::string shown(const json& j) {
  auto primitive = [](const json& e) { return e.is_primitive(); };
  const bool flat = j.is_primitive() || (j.is_array() && j.size() <= 8 && std::all_of(j.begin(), j.end(), primitive));
  if (!flat) return fmt::format("{} of size {}", j.is_array() ? "an array" : "an object", j.size());
  std::string text = j.dump();
  if (text.size() <= 80) return text;
  std::size_t cut = 77;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xc0) == 0x80) --cut;  // not inside a UTF-8 character
  return text.substr(0, cut) + "...";
}

// One tensor of the header, checked against itself and the file size.
struct Entry {
  std::string name;
  DType dtype = Float32;
  bool int8 = false;  // I8, whatever dtype says
  Shape shape;
  std::uint64_t begin = 0, end = 0;
};

json parse_header(const std::string& path, const std::string& text) {
  // The JSON parser would skip a byte order mark and stop at a NUL, so that a
  // header could hide content after one: refuse both (the format is plain UTF-8 JSON).
  if (text.starts_with("\xEF\xBB\xBF")) bad(path, "the header starts with a byte order mark (EF BB BF)");
  if (auto nul = text.find('\0'); nul != std::string::npos)
    bad(path, "the header has a NUL byte at offset {} (of {})", nul, text.size());
  // A key given twice in one object (two tensors with one name, two metadata
  // entries, two "dtype"s) would silently hide one of them; refuse. One set of
  // keys per open object, innermost last.
  std::vector<std::set<std::string>> open_objects;
  std::string top_key;  // the tensor (or "__metadata__") being read
  json::parser_callback_t no_duplicates = [&](int depth, json::parse_event_t event, json& parsed) {
    if (event == json::parse_event_t::object_start) open_objects.emplace_back();
    else if (event == json::parse_event_t::object_end && !open_objects.empty()) open_objects.pop_back();
    else if (event == json::parse_event_t::key && !open_objects.empty()) {
      const std::string key = parsed.get<std::string>();
      if (depth == 1) top_key = key;
      if (!open_objects.back().insert(key).second) {
        if (depth == 1) bad(path, "the header names '{}' twice", printable(key));
        bad(path, "the header's entry '{}' has the key '{}' twice", printable(top_key), printable(key));
      }
    }
    return true;
  };
  try {
    return json::parse(text, no_duplicates);
  } catch (const json::exception& e) {
    bad(path, "the header is not valid JSON: {}", json_reason(e));
  }
}

// The value of entry[key], which must be there.
const json& field(const std::string& path, const std::string& name, const json& entry, const char* key) {
  auto it = entry.find(key);
  if (it == entry.end()) bad(path, "tensor '{}' has no \"{}\"", name, key);
  return *it;
}

Shape parse_shape(const std::string& path, const std::string& name, const json& shape) {
  if (!shape.is_array()) bad(path, "tensor '{}': \"shape\" must be an array of integers, got {}", name, shown(shape));
  if (shape.size() > static_cast<std::size_t>(kMaxRank))
    bad(path, "tensor '{}' has rank {}, more than attend's maximum rank {}", name, shape.size(), kMaxRank);
  std::vector<std::int64_t> dims;
  for (const json& d : shape) {
    if (!d.is_number_integer()) bad(path, "tensor '{}': \"shape\" must be an array of integers, got {}", name, shown(shape));
    if (d.is_number_unsigned() && d.get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
      bad(path, "tensor '{}' has a dimension too large in its shape {}", name, shown(shape));
    std::int64_t v = d.get<std::int64_t>();
    if (v < 0) bad(path, "tensor '{}' has negative dimension {} in its shape {}", name, v, shown(shape));
    dims.push_back(v);
  }
  // Shape refuses an element count past int64; say so here, naming the file. A
  // zero dimension is looked for first: [0, 2^62, 2^62] holds 0 elements.
  const bool empty = std::find(dims.begin(), dims.end(), 0) != dims.end();
  std::int64_t product = 1;
  for (std::int64_t d : dims)
    if (!empty && __builtin_mul_overflow(product, d, &product))
      bad(path, "tensor '{}' has shape [{}] with too many elements", name, fmt::join(dims, ", "));
  return Shape(std::span<const std::int64_t>(dims));
}

// numel * element size, or nothing when it does not fit in 64 bits.
bool byte_count(const Shape& shape, std::uint64_t element_size, std::uint64_t& bytes) {
  bytes = element_size;
  for (std::int64_t d : shape)
    if (d == 0) return bytes = 0, true;
  for (std::int64_t d : shape)
    if (__builtin_mul_overflow(bytes, static_cast<std::uint64_t>(d), &bytes)) return false;
  return true;
}

Entry parse_entry(const std::string& path, const std::string& raw_name, const json& info, std::uint64_t data_size) {
  Entry e;
  e.name = raw_name;
  const std::string name = printable(raw_name);  // for messages: a name may hold terminal escapes
  if (!info.is_object()) bad(path, "tensor '{}': the entry is not a JSON object but {}", name, shown(info));

  const json& dtype = field(path, name, info, "dtype");
  if (!dtype.is_string()) bad(path, "tensor '{}': \"dtype\" must be a string, got {}", name, shown(dtype));
  if (dtype == "F32") e.dtype = Float32;
  else if (dtype == "F64") e.dtype = Float64;
  else if (dtype == "I8") e.int8 = true;
  else bad(path, "tensor '{}' has unsupported dtype '{}' (attend reads F32, F64 and I8)", name,
           printable(dtype.get<std::string>()));

  e.shape = parse_shape(path, name, field(path, name, info, "shape"));

  const json& offsets = field(path, name, info, "data_offsets");
  if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() || !offsets[1].is_number_unsigned())
    bad(path, "tensor '{}': \"data_offsets\" must be two non-negative integers, got {}", name, shown(offsets));
  e.begin = offsets[0].get<std::uint64_t>();
  e.end = offsets[1].get<std::uint64_t>();
  if (e.begin > e.end) bad(path, "tensor '{}' has data_offsets [{}, {}] that end before they begin", name, e.begin, e.end);
  if (e.end > data_size)
    bad(path, "tensor '{}' has data_offsets [{}, {}] past the end of the data section ({} bytes; is the file truncated?)",
        name, e.begin, e.end, data_size);

  std::uint64_t bytes = 0;
  if (!byte_count(e.shape, e.int8 ? 1 : dtype_size(e.dtype), bytes))
    bad(path, "tensor '{}' has shape {} with too many elements", name, e.shape);
  if (e.end - e.begin != bytes)
    bad(path, "tensor '{}' has data_offsets [{}, {}] but {} {} needs {} bytes", name, e.begin, e.end,
        e.int8 ? "I8" : code_of(e.dtype), e.shape, bytes);
  return e;
}

std::map<std::string, std::string> parse_metadata(const std::string& path, const json& metadata) {
  if (!metadata.is_object()) bad(path, "\"__metadata__\" must be an object of strings, got {}", shown(metadata));
  std::map<std::string, std::string> out;
  for (const auto& [key, value] : metadata.items()) {
    if (!value.is_string())
      bad(path, "\"__metadata__\" value of '{}' must be a string, got {}", printable(key), shown(value));
    out[key] = value.get<std::string>();
  }
  return out;
}

// The tensors must cover the data section exactly: no overlap (two tensors
// sharing bytes), no hole, nothing after the last one (the format's rule; it
// keeps files from hiding other content).
void check_layout(const std::string& path, std::vector<Entry>& entries, std::uint64_t data_size) {
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return std::tie(a.begin, a.end, a.name) < std::tie(b.begin, b.end, b.name);
  });
  std::uint64_t covered = 0;
  const Entry* previous = nullptr;
  for (const Entry& e : entries) {
    if (e.begin < covered)
      bad(path, "tensors '{}' and '{}' overlap: data_offsets [{}, {}] and [{}, {}]", printable(previous->name),
          printable(e.name), previous->begin, previous->end, e.begin, e.end);
    if (e.begin > covered)
      bad(path, "bytes [{}, {}) of the data section belong to no tensor (before tensor '{}')", covered, e.begin,
          printable(e.name));
    covered = e.end;
    previous = &e;
  }
  if (covered != data_size)
    bad(path, "the data section has {} bytes but the tensors end at byte {}", data_size, covered);
}

}  // namespace

SafetensorsFile load_safetensors(const std::string& path) {
  InputFile file(path, "load_safetensors");
  if (file.size() < 8) bad(path, "the file has {} bytes, too few for the 8-byte header length", file.size());
  unsigned char length[8];
  file.read_at(0, length, 8);
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | length[i];
  if (n > kMaxSafetensorsHeader)
    bad(path, "the header length {} is larger than the limit of {} bytes (corrupt file?)", n, kMaxSafetensorsHeader);
  if (n > file.size() - 8)
    bad(path, "the header length {} runs past the end of the file ({} bytes)", n, file.size());
  std::string text(static_cast<std::size_t>(n), '\0');
  file.read_at(8, text.data(), text.size());
  const std::uint64_t data_start = 8 + n;
  const std::uint64_t data_size = file.size() - data_start;

  json header = parse_header(path, text);
  if (!header.is_object()) bad(path, "the header is not a JSON object but {}", header.type_name());

  SafetensorsFile out;
  std::vector<Entry> entries;
  for (const auto& [name, info] : header.items()) {
    if (name == "__metadata__") out.metadata = parse_metadata(path, info);
    else entries.push_back(parse_entry(path, name, info, data_size));
  }
  check_layout(path, entries, data_size);
  // The tensors cover the data section, so data_size is what loading allocates.
  // The file size alone proves nothing: a sparse file claims terabytes on a few
  // kilobytes of disk.
  if (data_size > limits::kMaxTensorBytes)
    bad(path, "the tensors hold {} bytes, more than the limit of {} (core/io/limits.hpp)", data_size,
        limits::bytes_text(limits::kMaxTensorBytes));
  if (const std::uint64_t memory = limits::physical_memory(); memory > 0 && data_size > memory)
    bad(path, "the tensors hold {} bytes, more than this machine's memory ({})", data_size, limits::bytes_text(memory));

  for (const Entry& e : entries) {
    const std::size_t bytes = static_cast<std::size_t>(e.end - e.begin);
    if (e.int8) {
      Int8Array a{e.shape, std::vector<std::int8_t>(bytes)};
      if (bytes > 0) file.read_at(data_start + e.begin, a.values.data(), bytes);
      out.int8.emplace(e.name, std::move(a));
      continue;
    }
    Tensor t = empty(e.shape, e.dtype);
    if (bytes > 0) file.read_at(data_start + e.begin, t.raw_data(), bytes);
    out.tensors.emplace(e.name, std::move(t));
  }
  return out;
}

}  // namespace attend
