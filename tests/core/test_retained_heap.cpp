// A program that uses attend as a library gets the retained heap
// (memory::retain_freed_heap, core/storage.hpp) without asking, as the attend
// command does: memory it frees and allocates again, as decoding does with its
// hypotheses and per-search buffers, stops touching fresh pages. A program that
// chose malloc's thresholds itself keeps its choice. Each case runs in a child
// process of its own, because malloc's thresholds belong to the whole process
// and attend sets its default once, at the first tensor. Counts page faults
// (getrusage), not time.
#include <doctest/doctest.h>
#include <malloc.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <vector>

#include "core/storage.hpp"
#include "core/tensor.hpp"

using namespace attend;

namespace {

// After the program's first tensor, turns that allocate 40 blocks of 96 KiB,
// touch every page and free them all: the minor page faults of turns 2 to 6.
// The blocks are under glibc's starting mmap threshold (128 KiB), so glibc never
// maps one and never raises its thresholds by itself (it does on freeing a block
// it had mapped); with its starting values it gives the 3.75 MiB freed at the top
// of the heap back at every turn, and the next turn faults them in again.
long faults_of_repeated_buffers() {
  const Tensor first = zeros({4});
  auto turn = [] {
    std::vector<char*> blocks;
    for (int i = 0; i < 40; ++i) {
      char* p = static_cast<char*>(std::malloc(std::size_t{96} << 10));
      if (p == nullptr) std::abort();
      for (std::size_t j = 0; j < (std::size_t{96} << 10); j += 4096) p[j] = 1;
      asm volatile("" : : "r"(p) : "memory");  // the writes are not dead code
      blocks.push_back(p);
    }
    for (auto it = blocks.rbegin(); it != blocks.rend(); ++it) std::free(*it);
  };
  turn();
  const long f0 = memory::minor_page_faults();
  for (int i = 0; i < 5; ++i) turn();
  return memory::minor_page_faults() - f0;
}

// Runs `before` (what the program does before its first tensor) and then the
// turns in a child process; their page faults.
long faults_in_child(void (*before)()) {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::close(fds[0]);
    before();
    const long faults = faults_of_repeated_buffers();
    const bool sent = ::write(fds[1], &faults, sizeof faults) == static_cast<ssize_t>(sizeof faults);
    ::_exit(sent ? 0 : 1);
  }
  ::close(fds[1]);
  long faults = -1;
  const bool got = ::read(fds[0], &faults, sizeof faults) == static_cast<ssize_t>(sizeof faults);
  ::close(fds[0]);
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  REQUIRE(got);
  return faults;
}

// glibc's starting values, put back with mallopt, as in a program where nothing
// has freed a block that glibc had mapped yet: this one may have, and glibc then
// raised its thresholds by itself. attend does not see mallopt (glibc has no way
// to read the thresholds back): to attend, the child has not chosen.
void glibc_starting_values() {
  mallopt(M_TRIM_THRESHOLD, 128 << 10);
  mallopt(M_MMAP_THRESHOLD, 128 << 10);
}

}  // namespace

TEST_CASE("a library program gets the retained heap without asking, and keeps a choice of its own") {
#if defined(__SANITIZE_ADDRESS__)
  return;  // its allocator, not glibc's (not memory::caching(): this process makes no tensor, its children do)
#endif
  const long by_default = faults_in_child([] { glibc_starting_values(); });
  const long chose_glibc_default = faults_in_child([] {
    glibc_starting_values();
    memory::retain_freed_heap(std::size_t{128} << 10);
  });
  const long chose_by_environment = faults_in_child([] {
    glibc_starting_values();
    ::setenv("MALLOC_TRIM_THRESHOLD_", "131072", 1);  // glibc read it at its start; attend reads it at the first tensor
  });
  MESSAGE("minor faults over 5 turns: ", by_default, " by default, ", chose_glibc_default,
          " after retain_freed_heap(128 KiB), ", chose_by_environment, " with MALLOC_TRIM_THRESHOLD_ set");
  CHECK(by_default < 10);
  CHECK(chose_glibc_default > 100);  // the pages the default saves are there to save
  CHECK(chose_by_environment > 100);
}
