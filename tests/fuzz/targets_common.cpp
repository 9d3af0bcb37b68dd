#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <system_error>

#include <unistd.h>

#include <fmt/format.h>

#include "tests/fuzz/targets.hpp"

namespace attend::fuzz {

namespace fs = std::filesystem;

void finding(const std::string& what) { throw Finding("fuzz finding: " + what); }

void expected(const std::exception& e) {
  static const bool verbose = std::getenv("ATTEND_FUZZ_VERBOSE") != nullptr;
  if (verbose) fmt::print(stderr, "attend::Error (expected): {}\n", e.what());
}

namespace {
std::string make_scratch_dir() {
  std::error_code ec;
  fs::path base = fs::is_directory("/dev/shm", ec) ? fs::path("/dev/shm") : fs::temp_directory_path();
  fs::path dir = base / fmt::format("attend-fuzz-{}", ::getpid());
  fs::create_directories(dir);
  return dir.string();
}
void remove_scratch_dir() {
  std::error_code ec;
  fs::remove_all(scratch_dir(), ec);
}
}  // namespace

const std::string& scratch_dir() {
  // Never destroyed: the exit handler that removes it runs after static destructors.
  static const std::string& dir = *[] {
    auto* d = new std::string(make_scratch_dir());
    std::atexit(remove_scratch_dir);
    return d;
  }();
  return dir;
}

std::string scratch_file(std::string_view name, std::string_view bytes) {
  std::string path = (fs::path(scratch_dir()) / name).string();
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) finding(fmt::format("cannot write the scratch file {}", path));  // the harness, not the reader
  return path;
}

std::string_view as_text(const std::uint8_t* data, std::size_t size) {
  return size == 0 ? std::string_view() : std::string_view(reinterpret_cast<const char*>(data), size);
}

std::uint8_t Choices::byte() { return pos_ < size_ ? data_[pos_++] : 0; }

std::uint64_t Choices::below(std::uint64_t n) {
  std::uint64_t v = 0;
  for (std::uint64_t range = 1; range < n && range < (1ull << 56); range <<= 8) v = (v << 8) | byte();
  return v % n;
}

std::string Choices::bytes(std::size_t max_size) {
  const std::size_t n = static_cast<std::size_t>(below(max_size + 1));
  std::string out;
  for (std::size_t i = 0; i < n && pos_ < size_; ++i) out += static_cast<char>(byte());
  return out;
}

std::span<const Target> targets() {
  static const Target list[] = {
#include "fuzz_targets.inc"
  };
  return list;
}

}  // namespace attend::fuzz
