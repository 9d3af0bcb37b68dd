// write_file_atomic by what a path names (core/io/file_io.hpp): a regular file is
// replaced atomically, a device or FIFO is written through and never renamed
// over, a symbolic link is followed and stays a link, this process's own
// descriptors (/dev/fd/N) continue their stream, and every failed write names
// the file. The full disk is a device node made here, like /dev/full (char 1 7).
#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <thread>

#include "core/error.hpp"
#include "core/io/file_io.hpp"
#include "core/io/safetensors.hpp"
#include "core/tensor.hpp"
#include "models/data/vocabulary.hpp"
#include "tests/support/scratch.hpp"
#include "tests/support/special_files.hpp"

using namespace attend;
namespace fs = std::filesystem;
using namespace attend::testing;

namespace {

// The entries of a directory whose name holds ".tmp-": what a write left behind.
int temporaries_in(const Scratch& s) {
  int n = 0;
  for (const auto& e : fs::directory_iterator(s.dir)) n += e.path().filename().string().find(".tmp-") != std::string::npos;
  return n;
}

std::string make_fifo(const Scratch& s) {
  const std::string path = s.path("fifo");
  REQUIRE(::mkfifo(path.c_str(), 0600) == 0);
  return path;
}

// More than one pipe buffer (64 KiB), so that the writer waits on the reader.
std::string big_text() {
  std::string text;
  for (int i = 0; text.size() < 300000; ++i) text += "line " + std::to_string(i) + "\n";
  return text;
}

void check_error_names(const std::string& path, const std::function<void()>& write, const std::string& reason) {
  try {
    write();
    FAIL("no error for ", path);
  } catch (const Error& e) {
    CHECK_MESSAGE(std::string(e.what()).find(path) != std::string::npos, e.what());
    CHECK_MESSAGE(std::string(e.what()).find(reason) != std::string::npos, e.what());
  }
}

}  // namespace

TEST_CASE("output paths: a full device is written through, never replaced, and the error names it") {
  const Scratch s("attend-output-full");
  std::string why_not;
  const std::string full = make_full_device(s, why_not);
  if (full.empty()) {
    MESSAGE("skipped: ", why_not);
    return;
  }
  check_error_names(full, [&] { write_file_atomic(full, "some bytes\n"); }, "No space left on device");
  CHECK(is_full_device(full));
  // The streaming writer that the model files use, and the vocabulary's.
  check_error_names(full, [&] { save_safetensors(full, {{"w", ones({2, 3})}}); }, "No space left on device");
  CHECK(is_full_device(full));
  Vocabulary vocab;
  check_error_names(full, [&] { vocab.save(full); }, "No space left on device");
  CHECK(is_full_device(full));
  // A symbolic link to it: the same error, and both stay what they were.
  const std::string link = s.path("link-to-full");
  fs::create_symlink("full", link);
  check_error_names(link, [&] { write_file_atomic(link, "x"); }, "No space left on device");
  CHECK(fs::is_symlink(link));
  CHECK(is_full_device(full));
  CHECK(temporaries_in(s) == 0);
  // A stdio stream on it: write_stream flushes and writes, each checked.
  std::FILE* stream = std::fopen(full.c_str(), "w");
  REQUIRE(stream != nullptr);
  check_error_names("the full stream", [&] { write_stream(stream, "hello\n", "the full stream"); },
                    "No space left on device");
  std::fputs("buffered", stream);
  check_error_names("the full stream", [&] { flush_stream(stream, "the full stream"); }, "No space left on device");
  std::fclose(stream);
}

TEST_CASE("output paths: a FIFO with a reader gets every byte, and stays a FIFO") {
  const Scratch s("attend-output-fifo");
  const std::string fifo = make_fifo(s);
  const std::string text = big_text();
  FifoReader reader(fifo);
  write_file_atomic(fifo, text);
  CHECK(reader.finish() == text);
  CHECK(is_fifo(fifo));
  CHECK(temporaries_in(s) == 0);

  // A safetensors file streamed through a FIFO reads back as written.
  FifoReader again(fifo);
  save_safetensors(fifo, {{"w", full({2, 3}, 1.5)}}, {{"note", "through a fifo"}});
  const std::string bytes = again.finish();
  const std::string copy = s.path("copy.safetensors");
  write_file_atomic(copy, bytes);
  SafetensorsFile loaded = load_safetensors(copy);
  CHECK(loaded.metadata.at("note") == "through a fifo");
  CHECK(equal(loaded.tensors.at("w"), full({2, 3}, 1.5)));
  CHECK(is_fifo(fifo));
}

TEST_CASE("output paths: a FIFO that nobody reads is an error after a bounded wait, not a hang") {
  const Scratch s("attend-output-fifo-alone");
  const std::string fifo = make_fifo(s);
  const auto start = std::chrono::steady_clock::now();
  check_error_names(fifo, [&] { write_file_atomic(fifo, "x"); }, "no process opened for reading");
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(60));
  CHECK(is_fifo(fifo));
  CHECK(temporaries_in(s) == 0);
}

TEST_CASE("output paths: a symbolic link is followed, its target is replaced and the link stays") {
  const Scratch s("attend-output-link");
  fs::create_directories(s.dir / "real");
  const std::string target = s.write("real/target.txt", "old\n");
  const std::string link = s.path("link");
  fs::create_symlink("real/target.txt", link);  // relative: resolved from the link's folder
  const std::string chain = s.path("chain");
  fs::create_symlink(link, chain);  // absolute, to another link
  write_file_atomic(link, "new\n");
  CHECK(fs::is_symlink(link));
  CHECK(fs::read_symlink(link) == "real/target.txt");
  CHECK(read_file(target) == "new\n");
  write_file_atomic(chain, "newer\n");
  CHECK(fs::is_symlink(chain));
  CHECK(fs::is_symlink(link));
  CHECK(read_file(target) == "newer\n");
  // A link to a file that does not exist yet creates that file.
  const std::string dangling = s.path("dangling");
  fs::create_symlink("real/new.txt", dangling);
  write_file_atomic(dangling, "created\n");
  CHECK(fs::is_symlink(dangling));
  CHECK(read_file(s.path("real/new.txt")) == "created\n");
  CHECK(resolve_symlinks(chain) == target);
  CHECK(temporaries_in(s) == 0);
  for (const auto& e : fs::directory_iterator(s.dir / "real"))
    CHECK_MESSAGE(e.path().filename().string().find(".tmp-") == std::string::npos, e.path());
}

TEST_CASE("output paths: a regular file is replaced whole and keeps its permissions") {
  const Scratch s("attend-output-regular");
  const std::string path = s.write("file.txt", "old\n");
  fs::permissions(path, fs::perms::owner_read | fs::perms::owner_write);
  write_file_atomic(path, "new\n");
  CHECK(read_file(path) == "new\n");
  CHECK((fs::status(path).permissions() & fs::perms::all) == (fs::perms::owner_read | fs::perms::owner_write));
  // A write that fails midway leaves the old file whole and no temporary behind.
  CHECK_THROWS_AS(write_file_atomic(path, [](const ByteSink& sink) {
                    sink("half");
                    fail("the producer gave up");
                  }),
                  Error);
  CHECK(read_file(path) == "new\n");
  check_error_names(s.dir.string(), [&] { write_file_atomic(s.dir.string(), "x"); }, "is a directory");
  CHECK(temporaries_in(s) == 0);
}

TEST_CASE("output paths: /dev/fd/N and /proc/self/fd/N write through this process's descriptor") {
  const Scratch s("attend-output-descriptor");
  // A regular file open here: the write continues its stream, the file is not replaced.
  const std::string log = s.path("stream.txt");
  const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  REQUIRE(fd >= 0);
  REQUIRE(::write(fd, "before\n", 7) == 7);
  struct stat before {};
  REQUIRE(::stat(log.c_str(), &before) == 0);
  write_file_atomic("/dev/fd/" + std::to_string(fd), "through /dev/fd\n");
  write_file_atomic("/proc/self/fd/" + std::to_string(fd), "through /proc/self/fd\n");
  ::close(fd);
  struct stat after {};
  REQUIRE(::stat(log.c_str(), &after) == 0);
  CHECK(after.st_ino == before.st_ino);
  CHECK(read_file(log) == "before\nthrough /dev/fd\nthrough /proc/self/fd\n");
  // A pipe: the bytes come out of its other end.
  int pipe_fds[2];
  REQUIRE(::pipe(pipe_fds) == 0);
  write_file_atomic("/proc/self/fd/" + std::to_string(pipe_fds[1]), "piped\n");
  ::close(pipe_fds[1]);
  char buffer[16] = {};
  CHECK(::read(pipe_fds[0], buffer, sizeof buffer) == 6);
  ::close(pipe_fds[0]);
  CHECK(std::string(buffer) == "piped\n");
  // A descriptor that is not open is an error naming the path.
  check_error_names("/dev/fd/999", [&] { write_file_atomic("/dev/fd/999", "x"); }, "Bad file descriptor");
}
