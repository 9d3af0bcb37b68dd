#include "core/io/limits.hpp"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/io/file_io.hpp"

namespace attend::limits {

std::string read_bounded_file(const std::string& path, const std::string& op, std::uint64_t max_bytes) {
  InputFile file(path, op);  // refuses a directory, a FIFO or a device
  if (file.size() > max_bytes)
    fail("{}: {}: the file has {} bytes, more than the limit of {} (core/io/limits.hpp)", op, path, file.size(),
         bytes_text(max_bytes));
  std::string bytes(static_cast<std::size_t>(file.size()), '\0');
  file.read_at(0, bytes.data(), bytes.size());
  return bytes;
}

std::uint64_t physical_memory() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return 0;
  return static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page);
}

namespace {

// ATTEND_DECODE_MEMORY_LIMIT, for tests: a lower limit in bytes, so that a test
// can decode a line at the limit under a small cap on its address space
// (tests/tools/cli/test_decode_memory_cli.cpp). It can only lower the limit.
std::uint64_t limit_from_environment(std::uint64_t limit) {
  const char* text = std::getenv("ATTEND_DECODE_MEMORY_LIMIT");
  if (text == nullptr) return limit;
  std::uint64_t bytes = 0;
  const char* end = text + std::strlen(text);
  const auto [at, ec] = std::from_chars(text, end, bytes);
  if (ec != std::errc() || at != end || bytes == 0)
    fail("ATTEND_DECODE_MEMORY_LIMIT: '{}' is not a positive number of bytes", text);
  return std::min(limit, bytes);
}

}  // namespace

std::uint64_t decode_memory_limit() {
  static const std::uint64_t limit = [] {  // read once: every check of a run uses one limit
    const std::uint64_t physical = physical_memory();
    return limit_from_environment(physical == 0 ? kMaxDecodeBytes : std::min(kMaxDecodeBytes, physical / 2));
  }();
  return limit;
}

std::string bytes_text(std::uint64_t bytes) {
  if (bytes >= (std::uint64_t{1} << 30) && bytes % (std::uint64_t{1} << 30) == 0)
    return fmt::format("{} GiB", bytes >> 30);
  if (bytes >= (std::uint64_t{1} << 30)) return fmt::format("{:.1f} GiB", static_cast<double>(bytes) / (1 << 30));
  if (bytes >= (std::uint64_t{1} << 20)) return fmt::format("{:.1f} MiB", static_cast<double>(bytes) / (1 << 20));
  return fmt::format("{} bytes", bytes);
}

}  // namespace attend::limits
