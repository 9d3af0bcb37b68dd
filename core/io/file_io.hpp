#pragma once
// Reading and writing whole files with errors that name the file and the reason.
//
// Every writer of attend (model files, checkpoints, logs, reports, SVGs, JSON,
// translations) goes through write_file_atomic, which writes a path by what it
// names. A regular file, or a path that does not exist yet, is replaced
// atomically: a temporary file in the same directory, fsync, rename over the
// target, fsync of the directory; a crash, a kill or an error leaves the
// previous file (if any) whole, and the rename is the commit point. A device, a
// FIFO or a terminal is written through in place and never renamed over (a
// FIFO must find a reader within 10 s); /dev/stdout, /dev/stderr, /dev/fd/N and
// /proc/self/fd/N write through this process's own descriptor. A symbolic link
// is followed: the file it names is replaced and the link stays a link. Every
// write, sync and close is checked; a failure (a full disk: ENOSPC) throws
// attend::Error naming the path, so no caller reports success after it.
//
// Temporary names are always TARGET.tmp-PID-N (temp_path_for). A kill -9 can
// leave such files (or directories) behind; remove_stale_temporaries deletes
// those of processes that no longer run, and nothing else.
//
// Fault injection, for the fault tests only: the environment variable
// ATTEND_FAULT, read once, makes this file misbehave on purpose:
//   ATTEND_FAULT=kill-after-rename:N   raise SIGKILL right after the Nth rename
//                                      (rename_path, exchange_paths, write_file_atomic)
//   ATTEND_FAULT=enospc-at-write:N     the Nth write fails with ENOSPC (disk full), counting
//                                      the writes of write_file_atomic and write_stream
#include <cstddef>
#include <cstdint>
#include <cstdio>
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

// Writes bytes to path: a file atomically, a device or FIFO through (see above).
void write_file_atomic(const std::string& path, std::string_view bytes);

// Streaming variant for large files: produce(sink) calls sink(bytes) any number
// of times. If produce throws, the temporary file is removed, the target is left
// as it was and the exception propagates (a device or FIFO keeps what it got).
using ByteSink = std::function<void(std::string_view bytes)>;
void write_file_atomic(const std::string& path, const std::function<void(const ByteSink& sink)>& produce);

// The path that the symbolic links of path's last component lead to (path
// itself when it is no link): where a write to path lands. Stops at a path
// naming one of this process's descriptors (/proc/self/fd/1).
std::string resolve_symlinks(const std::string& path);

// Writes bytes to a stdio stream's descriptor after flushing the stream, every
// write checked (and subject to ATTEND_FAULT); errors name the stream by name,
// e.g. "standard output".
void write_stream(std::FILE* stream, std::string_view bytes, const std::string& name);
// fflush, and throws when it, or any earlier write to the stream, failed.
void flush_stream(std::FILE* stream, const std::string& name);

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
