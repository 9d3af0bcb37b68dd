// tests/support/scratch.hpp: a test's scratch directory is gone when the test ends,
// however it ends, or, when the program is killed, at the next program's first;
// tests.no_scratch_left (tests/support/no_scratch_left.cmake) checks that the test
// programs use it.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

#include "tests/support/scratch.hpp"

namespace fs = std::filesystem;
using attend::testing::Scratch;

TEST_CASE("a scratch directory is removed with its contents at the end of its scope") {
  fs::path dir;
  {
    const Scratch s("attend_scratch");
    dir = s.dir;
    CHECK(fs::is_directory(dir));
    fs::create_directories(dir / "model" / "checkpoint");
    s.write("model/checkpoint/state.json", "{}");
    CHECK(fs::exists(s.path("model/checkpoint/state.json")));
  }
  CHECK_FALSE(fs::exists(dir));
}

TEST_CASE("a scratch directory is removed when a failed check throws out of the test") {
  fs::path dir;
  try {
    const Scratch s("attend_scratch");
    dir = s.dir;
    s.write("file.txt", "x");
    throw std::runtime_error("a REQUIRE failed");
  } catch (const std::runtime_error&) {
  }
  REQUIRE_FALSE(dir.empty());
  CHECK_FALSE(fs::exists(dir));
}

TEST_CASE("scratch directories alive at once are distinct") {
  const Scratch a("attend_scratch"), b("attend_scratch");
  CHECK(a.dir != b.dir);
  a.write("one.txt", "1");
  CHECK(fs::exists(a.path("one.txt")));
  CHECK_FALSE(fs::exists(b.path("one.txt")));
}

TEST_CASE("a program's scratch directories are in a directory of its own, locked while it runs") {
  const Scratch s("attend_scratch");
  const fs::path root = s.dir.parent_path();
  CHECK(root.filename().string() == "attend-tests-" + std::to_string(::getpid()));
  const fs::path lock = root.string() + ".lock";
  REQUIRE(fs::exists(lock));
  const int fd = ::open(lock.c_str(), O_RDWR | O_CLOEXEC);
  REQUIRE(fd >= 0);
  CHECK(::flock(fd, LOCK_EX | LOCK_NB) != 0);  // held: this program runs
  ::close(fd);
}

// A program killed outright (a crash, a timeout's SIGKILL) runs no destructor:
// its directory stays until the next program's first scratch directory.
TEST_CASE("what a killed program left is removed by the next program, and what a running one has stays") {
  namespace detail = attend::testing::scratch_detail;
  const Scratch s("attend_scratch");
  const fs::path tmp = s.dir / "tmp";
  fs::create_directories(tmp);
  const detail::Root running(tmp);  // this process: alive
  fs::create_directories(running.dir() / "busy");
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    const auto* root = new detail::Root(tmp);  // never destroyed: the process is killed
    fs::create_directories(root->dir() / "crashed_0");
    std::ofstream(root->dir() / "crashed_0" / "model.safetensors") << "x";
    ::raise(SIGKILL);
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFSIGNALED(status));
  const fs::path left = tmp / ("attend-tests-" + std::to_string(pid));
  REQUIRE(fs::exists(left / "crashed_0" / "model.safetensors"));
  REQUIRE(fs::exists(left.string() + ".lock"));
  CHECK(detail::sweep_abandoned(tmp) == 1);
  CHECK_FALSE(fs::exists(left));
  CHECK_FALSE(fs::exists(left.string() + ".lock"));
  CHECK(fs::exists(running.dir() / "busy"));
  CHECK(fs::exists(running.lock()));
}
