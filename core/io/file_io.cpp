#include "core/io/file_io.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "core/error.hpp"

namespace attend {
namespace {

std::string reason(int err) { return std::error_code(err, std::generic_category()).message(); }

// The test hook (see file_io.hpp): ATTEND_FAULT=kill-after-rename:N or enospc-at-write:N.
struct FaultPlan {
  long kill_after_rename = 0, enospc_at_write = 0;  // 0: never
  std::atomic<long> renames{0}, writes{0};
  FaultPlan() {
    const char* spec = std::getenv("ATTEND_FAULT");
    if (spec == nullptr) return;
    long n = 0;
    if (std::sscanf(spec, "kill-after-rename:%ld", &n) == 1) kill_after_rename = n;
    else if (std::sscanf(spec, "enospc-at-write:%ld", &n) == 1) enospc_at_write = n;
  }
};
FaultPlan& faults() {
  static FaultPlan plan;
  return plan;
}
void after_rename() {
  FaultPlan& f = faults();
  if (f.kill_after_rename > 0 && ++f.renames == f.kill_after_rename) std::raise(SIGKILL);
}
// -1 with errno = ENOSPC when the plan says this write fails, else ::write.
ssize_t checked_write(int fd, const void* data, std::size_t n) {
  FaultPlan& f = faults();
  if (f.enospc_at_write > 0 && ++f.writes == f.enospc_at_write) {
    errno = ENOSPC;
    return -1;
  }
  return ::write(fd, data, n);
}

// Writes all of bytes, retrying after short writes and signals.
void write_all(int fd, std::string_view bytes, const std::string& tmp) {
  while (!bytes.empty()) {
    ssize_t n = checked_write(fd, bytes.data(), bytes.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("write_file_atomic: {}: cannot write: {}", tmp, reason(errno));
    }
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
}

// The temporary file until it has been renamed: closed and removed on any
// failure, so an exception leaves nothing behind.
struct PendingFile {
  std::string path;
  int fd = -1;
  bool committed = false;
  ~PendingFile() {
    if (fd >= 0) ::close(fd);
    if (!committed) ::unlink(path.c_str());
  }
};

// Makes the rename itself durable. Some file systems cannot sync a directory
// (EINVAL); there the rename is as durable as they allow.
void sync_directory(const std::string& path) {
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  const std::filesystem::path dir = parent.empty() ? std::filesystem::path(".") : parent;
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) fail("write_file_atomic: {}: cannot open its directory to sync it: {}", path, reason(errno));
  int rc = ::fsync(fd);
  int err = errno;
  ::close(fd);
  if (rc != 0 && err != EINVAL) fail("write_file_atomic: {}: cannot sync its directory: {}", path, reason(err));
}

}  // namespace

std::vector<std::string> split_lines(std::string_view text) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    lines.emplace_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

std::string read_file(const std::string& path) {
  InputFile file(path, "read_file");
  std::string bytes(static_cast<std::size_t>(file.size()), '\0');
  file.read_at(0, bytes.data(), bytes.size());
  return bytes;
}

void write_file_atomic(const std::string& path, std::string_view bytes) {
  write_file_atomic(path, [bytes](const ByteSink& sink) { sink(bytes); });
}

void write_file_atomic(const std::string& path, const std::function<void(const ByteSink& sink)>& produce) {
  if (path.empty()) fail("write_file_atomic: the path is empty");
  // A unique name beside the target (rename only works within one file system).
  PendingFile tmp;
  for (int attempt = 0; tmp.fd < 0; ++attempt) {
    tmp.path = temp_path_for(path);
    tmp.fd = ::open(tmp.path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (tmp.fd < 0 && (errno != EEXIST || attempt == 100)) {
      int err = errno;
      tmp.committed = true;  // nothing was created
      fail("write_file_atomic: {}: cannot create a temporary file beside it: {}", path, reason(err));
    }
  }
  produce([&](std::string_view bytes) { write_all(tmp.fd, bytes, tmp.path); });
  if (::fsync(tmp.fd) != 0) fail("write_file_atomic: {}: cannot sync: {}", tmp.path, reason(errno));
  int rc = ::close(tmp.fd);
  tmp.fd = -1;
  if (rc != 0) fail("write_file_atomic: {}: cannot close: {}", tmp.path, reason(errno));
  if (::rename(tmp.path.c_str(), path.c_str()) != 0)
    fail("write_file_atomic: {}: cannot rename {} over it: {}", path, tmp.path, reason(errno));
  tmp.committed = true;
  after_rename();
  sync_directory(path);
}

std::string temp_path_for(const std::string& path) {
  static std::atomic<unsigned> counter{0};
  return fmt::format("{}.tmp-{}-{}", path, ::getpid(), counter++);
}

void sync_path(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail("sync: {}: cannot open: {}", path, reason(errno));
  int rc = ::fsync(fd);
  int err = errno;
  ::close(fd);
  if (rc != 0 && err != EINVAL) fail("sync: {}: {}", path, reason(err));
}

void rename_path(const std::string& from, const std::string& to) {
  if (::rename(from.c_str(), to.c_str()) != 0) fail("rename: {} -> {}: {}", from, to, reason(errno));
  after_rename();
  sync_directory(to);
}

void exchange_paths(const std::string& a, const std::string& b) {
  if (::renameat2(AT_FDCWD, a.c_str(), AT_FDCWD, b.c_str(), RENAME_EXCHANGE) != 0)
    fail("rename: cannot swap {} and {}: {}", a, b, reason(errno));
  after_rename();
  sync_directory(b);
}

int remove_stale_temporaries(const std::string& dir, const std::string& only_name) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) return 0;
  int removed = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    // NAME.tmp-PID-N, with PID and N all digits and NAME not empty.
    const std::string name = entry.path().filename().string();
    const std::size_t at = name.rfind(".tmp-");
    if (at == std::string::npos || at == 0) continue;
    if (!only_name.empty() && name.compare(0, at, only_name) != 0) continue;
    const std::string rest = name.substr(at + 5);
    const std::size_t dash = rest.find('-');
    if (dash == std::string::npos || dash == 0 || dash + 1 == rest.size() || dash > 9) continue;
    if (rest.find_first_not_of("0123456789-") != std::string::npos || rest.find('-', dash + 1) != std::string::npos)
      continue;
    const long pid = std::strtol(rest.substr(0, dash).c_str(), nullptr, 10);
    if (pid <= 0) continue;
    // Signal 0 only asks whether the process exists; ours may be writing this very file.
    if (pid == ::getpid() || ::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;
    std::filesystem::remove_all(entry.path(), ec);
    if (!ec) ++removed;
  }
  return removed;
}

InputFile::InputFile(const std::string& path, std::string op) : path_(path), op_(std::move(op)) {
  // O_NONBLOCK: opening a FIFO would otherwise wait for a writer forever; it is
  // refused below as not a regular file (for which the flag changes nothing).
  do {
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  } while (fd_ < 0 && errno == EINTR);
  if (fd_ < 0) fail("{}: {}: cannot open: {}", op_, path_, reason(errno));
  struct stat st {};
  if (::fstat(fd_, &st) != 0) {
    int err = errno;
    ::close(fd_);
    fail("{}: {}: cannot stat: {}", op_, path_, reason(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd_);
    fail("{}: {}: not a regular file", op_, path_);
  }
  size_ = static_cast<std::uint64_t>(st.st_size);
}

InputFile::~InputFile() {
  if (fd_ >= 0) ::close(fd_);
}

void InputFile::read_at(std::uint64_t offset, void* dst, std::size_t n) const {
  if (offset > size_ || n > size_ - offset)
    fail("{}: {}: cannot read {} bytes at offset {}: the file has {} bytes", op_, path_, n, offset, size_);
  auto* out = static_cast<char*>(dst);
  while (n > 0) {
    ssize_t got = ::pread(fd_, out, n, static_cast<off_t>(offset));
    if (got < 0) {
      if (errno == EINTR) continue;
      fail("{}: {}: cannot read: {}", op_, path_, reason(errno));
    }
    if (got == 0) fail("{}: {}: the file ended at byte {} while reading (did it shrink?)", op_, path_, offset);
    out += got;
    offset += static_cast<std::uint64_t>(got);
    n -= static_cast<std::size_t>(got);
  }
}

}  // namespace attend
