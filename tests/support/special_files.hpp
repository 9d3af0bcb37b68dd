#pragma once
// Special files for the output-path tests: a node of the full device (char 1 7,
// like /dev/full) made in a scratch directory, FIFOs, and a reader that drains a
// FIFO on a thread of its own, as another process would.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <thread>

#include "tests/support/scratch.hpp"

namespace attend::testing {

// DIR/name, a node of the full device, or "" with the reason in why_not where
// mknod is not allowed (no CAP_MKNOD, a nodev mount).
inline std::string make_full_device(const Scratch& s, std::string& why_not, const std::string& name = "full") {
  const std::string path = s.path(name);
  if (::mknod(path.c_str(), S_IFCHR | 0600, makedev(1, 7)) != 0) {
    why_not = std::string("mknod is not allowed here: ") + std::strerror(errno);
    return "";
  }
  return path;
}

inline bool is_full_device(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 && S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, 7);
}

inline bool is_fifo(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 && S_ISFIFO(st.st_mode);
}

// Reads a FIFO to its end on a thread of its own (start it after forking any
// child: see tests/support/cli_child.hpp).
struct FifoReader {
  std::string got;
  std::thread thread;
  explicit FifoReader(const std::string& path)
      : thread([this, path] {
          const int fd = ::open(path.c_str(), O_RDONLY);
          if (fd < 0) return;
          char buffer[4096];
          for (ssize_t n; (n = ::read(fd, buffer, sizeof buffer)) != 0;) {
            if (n < 0 && errno == EINTR) continue;
            if (n < 0) break;
            got.append(buffer, static_cast<std::size_t>(n));
          }
          ::close(fd);
        }) {}
  std::string finish() {
    thread.join();
    return got;
  }
};

}  // namespace attend::testing
