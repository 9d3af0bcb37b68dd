#pragma once
// Reading and writing whole files with errors that name the file and the reason.
//
// write_file_atomic never leaves a half-written file behind: it writes a
// temporary file in the same directory, fsyncs it, renames it over the target
// and fsyncs the directory. A crash, a kill or an exception during the write
// leaves the previous file (if any) whole; the rename is the commit point.
//
// Temporary names are always TARGET.tmp-PID-N (temp_path_for). A kill -9 can
// leave such files (or directories) behind; remove_stale_temporaries deletes
// those of processes that no longer run, and nothing else.
//
// Fault injection, for the fault tests only: the environment variable
// ATTEND_FAULT, read once, makes this file misbehave on purpose:
//   ATTEND_FAULT=kill-after-rename:N   raise SIGKILL right after the Nth rename
//                                      (rename_path, exchange_paths, write_file_atomic)
//   ATTEND_FAULT=enospc-at-write:N     the Nth write fails with ENOSPC (disk full)
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace attend {

// The whole file as bytes. Throws attend::Error "read_file: PATH: cannot open: No such file or directory".
std::string read_file(const std::string& path);

// The lines of a text without their '\n': a last line without '\n' counts, and
// a text ending in '\n' has no empty line after it.
std::vector<std::string> split_lines(std::string_view text);

// Replaces the file at path with bytes, atomically (see above).
void write_file_atomic(const std::string& path, std::string_view bytes);

// Streaming variant for large files: produce(sink) calls sink(bytes) any number
// of times. If produce throws, the temporary file is removed, the target is left
// as it was and the exception propagates.
using ByteSink = std::function<void(std::string_view bytes)>;
void write_file_atomic(const std::string& path, const std::function<void(const ByteSink& sink)>& produce);

// A fresh name beside path: PATH.tmp-PID-N (N counts up within the process).
std::string temp_path_for(const std::string& path);

// rename(2), then fsync of the target's directory; errors name both paths.
void rename_path(const std::string& from, const std::string& to);
// Swaps two existing paths (files or directories) in one atomic step
// (renameat2 RENAME_EXCHANGE), then fsyncs their directory.
void exchange_paths(const std::string& a, const std::string& b);
// fsync of a file or directory (flushes a directory's entries).
void sync_path(const std::string& path);

// Deletes the entries of dir named NAME.tmp-PID-N whose process PID no longer
// runs (a kill -9 left them); directories are removed with their contents.
// With a name, only NAME.tmp-PID-N for that NAME. Returns how many were
// removed. A missing dir removes nothing.
int remove_stale_temporaries(const std::string& dir, const std::string& name = "");

// A regular file open for reading at arbitrary offsets (readers that validate a
// header before reading the rest, such as load_safetensors). Errors start with
// "OP: PATH: ", op naming the caller.
class InputFile {
 public:
  InputFile(const std::string& path, std::string op);
  ~InputFile();
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;

  const std::string& path() const { return path_; }
  std::uint64_t size() const { return size_; }
  // Reads exactly n bytes at offset into dst; throws if the file has fewer.
  void read_at(std::uint64_t offset, void* dst, std::size_t n) const;

 private:
  std::string path_;
  std::string op_;
  int fd_ = -1;
  std::uint64_t size_ = 0;
};

}  // namespace attend
