#pragma once
// A scratch directory for one test, removed when the test ends, however it
// ends (a failed REQUIRE throws past any remove_all at the end of a test case).
// Every test that writes files puts them in one of these.
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <string>

namespace attend::testing {

// PREFIX_PID_N under the system's temporary directory: N tells apart the
// scratch directories of one process, which may be alive at once.
struct Scratch {
  std::filesystem::path dir;
  explicit Scratch(const std::string& prefix = "attend_cli") : dir(unique_path(prefix)) {
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
  }
  ~Scratch() {
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
  static std::filesystem::path unique_path(const std::string& prefix) {
    static std::atomic<int> counter{0};
    return std::filesystem::temp_directory_path() /
           (prefix + "_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
  }
};

}  // namespace attend::testing
