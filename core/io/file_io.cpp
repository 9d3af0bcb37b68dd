#include "core/io/file_io.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <system_error>
#include <thread>

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

// Writes all of bytes, retrying after short writes and signals; an error
// names `name`, the file the caller asked for.
void write_all(int fd, std::string_view bytes, const std::string& name) {
  while (!bytes.empty()) {
    ssize_t n = checked_write(fd, bytes.data(), bytes.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("write: {}: cannot write: {}", name, reason(errno));
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
  if (fd < 0) fail("write: {}: cannot open its directory to sync it: {}", path, reason(errno));
  int rc = ::fsync(fd);
  int err = errno;
  ::close(fd);
  if (rc != 0 && err != EINVAL) fail("write: {}: cannot sync its directory: {}", path, reason(err));
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

namespace {

constexpr int kMaxLinks = 40;  // as the kernel's own limit on a chain of symbolic links
constexpr auto kFifoWait = std::chrono::seconds(10);

// The descriptor of this process a path names by itself: /dev/stdout,
// /dev/stderr, /dev/fd/N, /proc/self/fd/N, /proc/PID/fd/N; -1 for any other.
// Opening such a path would reopen the file behind the descriptor (at offset
// 0, or a new file if it was renamed over); writing through the descriptor
// continues the stream where the process's own output stands.
int own_descriptor(const std::string& path) {
  const std::string p = std::filesystem::path(path).lexically_normal().string();
  if (p == "/dev/stdout") return 1;
  if (p == "/dev/stderr") return 2;
  for (const std::string& prefix : {std::string("/dev/fd/"), std::string("/proc/self/fd/"),
                                    std::string("/proc/thread-self/fd/"), fmt::format("/proc/{}/fd/", ::getpid())}) {
    if (p.size() <= prefix.size() || p.compare(0, prefix.size(), prefix) != 0) continue;
    const std::string digits = p.substr(prefix.size());
    if (digits.size() <= 9 && digits.find_first_not_of("0123456789") == std::string::npos) return std::stoi(digits);
  }
  return -1;
}

// What a symbolic link at path points to, as a path usable from here.
std::string link_target(const std::string& path) {
  std::string target(256, '\0');
  for (;;) {
    const ssize_t n = ::readlink(path.c_str(), target.data(), target.size());
    if (n < 0) fail("write: {}: cannot read the symbolic link: {}", path, reason(errno));
    if (static_cast<std::size_t>(n) < target.size()) {
      target.resize(static_cast<std::size_t>(n));
      break;
    }
    target.resize(target.size() * 2);
  }
  if (target.empty()) fail("write: {}: an empty symbolic link", path);
  if (target.front() == '/') return target;
  return (std::filesystem::path(path).parent_path() / target).string();
}

// Where a write to a path goes (see file_io.hpp).
struct Destination {
  enum class Kind { Replace, Through, Descriptor } kind = Kind::Replace;
  std::string path;  // Replace and Through: the file itself, symbolic links followed
  int fd = -1;       // Descriptor: this process's descriptor
  mode_t mode = 0;   // Replace of an existing file, and Through: its type and permissions
};

Destination destination_of(const std::string& path) {
  Destination d;
  d.path = resolve_symlinks(path);
  d.fd = own_descriptor(d.path);
  if (d.fd >= 0) {
    d.kind = Destination::Kind::Descriptor;
    return d;
  }
  struct stat st {};
  if (::lstat(d.path.c_str(), &st) != 0) return d;  // a new file; creating it says what is in the way
  d.mode = st.st_mode;
  if (S_ISREG(st.st_mode)) return d;
  if (S_ISDIR(st.st_mode)) fail("write: {}: is a directory", path);
  if (S_ISSOCK(st.st_mode)) fail("write: {}: is a socket; attend writes files, devices and FIFOs", path);
  d.kind = Destination::Kind::Through;  // a character or block device, or a FIFO
  return d;
}

// A device or FIFO opened for writing. O_NONBLOCK, because opening a FIFO
// blocks until a reader opens it: here a FIFO gets kFifoWait to find one, and
// then is an error rather than a hang. Writes block again once it is open.
int open_special(const std::string& name, const Destination& d) {
  const auto deadline = std::chrono::steady_clock::now() + kFifoWait;
  for (;;) {
    const int fd = ::open(d.path.c_str(), O_WRONLY | O_NOCTTY | O_CLOEXEC | O_NONBLOCK);
    if (fd >= 0) {
      const int flags = ::fcntl(fd, F_GETFL);
      if (flags < 0 || ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) {
        const int err = errno;
        ::close(fd);
        fail("write: {}: cannot open: {}", name, reason(err));
      }
      return fd;
    }
    if (errno == EINTR) continue;
    if (errno != ENXIO || !S_ISFIFO(d.mode)) fail("write: {}: cannot open: {}", name, reason(errno));
    if (std::chrono::steady_clock::now() >= deadline)
      fail("write: {}: a FIFO that no process opened for reading within {} s", name, kFifoWait.count());
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

// Writes through a device or FIFO in place: it is never renamed over.
void write_through(const std::string& name, const Destination& d, const std::function<void(const ByteSink&)>& produce) {
  struct Open {
    int fd;
    ~Open() {
      if (fd >= 0) ::close(fd);
    }
  } file{open_special(name, d)};
  produce([&](std::string_view bytes) { write_all(file.fd, bytes, name); });
  // A FIFO or a character device has nothing to sync (EINVAL); a block device has.
  if (S_ISBLK(d.mode) && ::fsync(file.fd) != 0) fail("write: {}: cannot sync: {}", name, reason(errno));
  const int rc = ::close(file.fd);
  file.fd = -1;
  if (rc != 0) fail("write: {}: cannot close: {}", name, reason(errno));
}

// Writes through one of this process's descriptors (/dev/stdout): after what
// stdio holds for it, so that the output keeps its order.
void write_descriptor(const std::string& name, int fd, const std::function<void(const ByteSink&)>& produce) {
  if (std::fflush(nullptr) != 0) fail("write: {}: cannot flush the output before it: {}", name, reason(errno));
  if (::fcntl(fd, F_GETFL) < 0) fail("write: {}: cannot write: {}", name, reason(errno));
  produce([&](std::string_view bytes) { write_all(fd, bytes, name); });
}

// Replaces the regular file (or creates the new one) at d.path atomically.
void replace_file(const std::string& name, const Destination& d, const std::function<void(const ByteSink&)>& produce) {
  // A unique name beside the target (rename only works within one file system).
  PendingFile tmp;
  for (int attempt = 0; tmp.fd < 0; ++attempt) {
    tmp.path = temp_path_for(d.path);
    tmp.fd = ::open(tmp.path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (tmp.fd < 0 && (errno != EEXIST || attempt == 100)) {
      int err = errno;
      tmp.committed = true;  // nothing was created
      fail("write: {}: cannot create a temporary file beside it: {}", name, reason(err));
    }
  }
  // The replacement keeps the permissions of the file it replaces.
  if (d.mode != 0 && ::fchmod(tmp.fd, d.mode & 07777) != 0)
    fail("write: {}: cannot give the new file the old one's permissions: {}", name, reason(errno));
  produce([&](std::string_view bytes) { write_all(tmp.fd, bytes, name); });
  if (::fsync(tmp.fd) != 0) fail("write: {}: cannot sync: {}", name, reason(errno));
  int rc = ::close(tmp.fd);
  tmp.fd = -1;
  if (rc != 0) fail("write: {}: cannot close: {}", name, reason(errno));
  if (::rename(tmp.path.c_str(), d.path.c_str()) != 0)
    fail("write: {}: cannot rename {} over it: {}", name, tmp.path, reason(errno));
  tmp.committed = true;
  after_rename();
  sync_directory(d.path);
}

}  // namespace

std::string resolve_symlinks(const std::string& path) {
  std::string p = path;
  for (int hop = 0; hop <= kMaxLinks; ++hop) {
    if (own_descriptor(p) >= 0) return p;
    struct stat st {};
    if (::lstat(p.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return p;
    p = link_target(p);
  }
  fail("write: {}: more than {} symbolic links in a row", path, kMaxLinks);
}

void write_file_atomic(const std::string& path, const std::function<void(const ByteSink& sink)>& produce) {
  if (path.empty()) fail("write: the path is empty");
  const Destination d = destination_of(path);
  switch (d.kind) {
    case Destination::Kind::Replace: return replace_file(path, d, produce);
    case Destination::Kind::Through: return write_through(path, d, produce);
    case Destination::Kind::Descriptor: return write_descriptor(path, d.fd, produce);
  }
}

void write_stream(std::FILE* stream, std::string_view bytes, const std::string& name) {
  if (std::fflush(stream) != 0) fail("write: {}: cannot write: {}", name, reason(errno));
  write_all(::fileno(stream), bytes, name);
}

void flush_stream(std::FILE* stream, const std::string& name) {
  errno = 0;
  if (std::fflush(stream) != 0 || std::ferror(stream))
    fail("write: {}: cannot write: {}", name, errno != 0 ? reason(errno) : std::string("a write failed"));
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
