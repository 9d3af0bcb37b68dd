#pragma once
// A scratch directory for one test, removed when the test ends, however it
// ends (a failed REQUIRE throws past any remove_all at the end of a test case).
// Every test that writes files puts them in one of these.
//
// A test program that dies outright (a crash, the SIGKILL of a timeout) runs no
// destructor. So a program's scratch directories live in a directory of its own,
// TMP/attend-tests-PID, next to a lock file TMP/attend-tests-PID.lock that the
// program holds (flock) while it runs; the kernel drops the lock however the
// process ends. The first scratch directory of every test program removes the
// directories whose lock nobody holds: what dead programs left.
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <string>

namespace attend::testing {

namespace scratch_detail {

inline const std::string kRootPrefix = "attend-tests-";

// Removes TMP/attend-tests-* whose lock file no process holds, and the lock
// file with it. Returns how many it removed.
inline int sweep_abandoned(const std::filesystem::path& tmp) {
  namespace fs = std::filesystem;
  int removed = 0;
  std::error_code error;
  for (const fs::directory_entry& entry : fs::directory_iterator(tmp, error)) {
    const fs::path lock = entry.path();
    const std::string name = lock.filename().string();
    if (!name.starts_with(kRootPrefix) || lock.extension() != ".lock") continue;
    const int fd = ::open(lock.c_str(), O_RDWR | O_CLOEXEC);
    if (fd < 0) continue;
    struct stat held {}, named {};
    // Still the file of that name once locked: its owner did not end and another take the name meanwhile.
    if (::flock(fd, LOCK_EX | LOCK_NB) == 0 && ::fstat(fd, &held) == 0 && ::stat(lock.c_str(), &named) == 0 &&
        held.st_ino == named.st_ino && held.st_dev == named.st_dev) {
      std::error_code ignored;
      fs::path dir = lock;
      dir.replace_extension();
      fs::remove_all(dir, ignored);
      fs::remove(lock, ignored);
      ++removed;
    }
    ::close(fd);
  }
  return removed;
}

// A process's directory of scratch directories in `tmp`, locked while the
// process runs; made after removing the abandoned ones.
class Root {
 public:
  static const Root& get() {  // this process's, in the system's temporary directory
    static const Root root(std::filesystem::temp_directory_path());
    return root;
  }
  const std::filesystem::path& dir() const { return dir_; }
  ~Root() {
    if (::getpid() != owner_) return;  // a forked child that exits: the directory is its parent's
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
    std::filesystem::remove(lock_, ignored);
    ::close(fd_);
  }
  Root(const Root&) = delete;
  Root& operator=(const Root&) = delete;

  explicit Root(const std::filesystem::path& tmp) {
    sweep_abandoned(tmp);
    const std::string name = kRootPrefix + std::to_string(owner_);
    dir_ = tmp / name;
    lock_ = tmp / (name + ".lock");
    // A sweeper may take the file between its creation and our lock: lock again
    // until the file locked is the one the name gives.
    for (;;) {
      fd_ = ::open(lock_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
      if (fd_ < 0) throw std::filesystem::filesystem_error("cannot create", lock_, std::error_code(errno, std::generic_category()));
      struct stat held {}, named {};
      if (::flock(fd_, LOCK_EX) == 0 && ::fstat(fd_, &held) == 0 && ::stat(lock_.c_str(), &named) == 0 &&
          held.st_ino == named.st_ino && held.st_dev == named.st_dev)
        break;
      ::close(fd_);
    }
    std::filesystem::remove_all(dir_);  // a dead process's of the same number
    std::filesystem::create_directories(dir_);
  }
  const std::filesystem::path& lock() const { return lock_; }

 private:
  pid_t owner_ = ::getpid();
  std::filesystem::path dir_, lock_;
  int fd_ = -1;
};

}  // namespace scratch_detail

// TMP/attend-tests-PID/PREFIX_N: N tells apart the scratch directories of one
// process, which may be alive at once.
struct Scratch {
  std::filesystem::path dir;
  explicit Scratch(const std::string& prefix = "attend_cli") : dir(unique_path(prefix)) {
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
  }
  ~Scratch() {
    if (::getpid() != owner_) return;  // a forked child unwinding: the directory is its parent's
    std::error_code ignored;  // a destructor must not throw
    std::filesystem::remove_all(dir, ignored);
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  std::string path(const std::string& name) const { return (dir / name).string(); }
  std::string write(const std::string& name, const std::string& bytes) const {
    std::ofstream(path(name), std::ios::binary) << bytes;
    return path(name);
  }

 private:
  pid_t owner_ = ::getpid();
  static std::filesystem::path unique_path(const std::string& prefix) {
    static std::atomic<int> counter{0};
    return scratch_detail::Root::get().dir() / (prefix + "_" + std::to_string(counter++));
  }
};

}  // namespace attend::testing
