#pragma once
// `attend ARGS...` run as main() runs it (tools::run_cli) in a forked child, with
// its stdin, stdout and stderr in files of a scratch directory, so that a crash
// or a hang is a failed check rather than a dead test program. Shared by the
// command-line tests (test_cli_hardening, test_subword_cli, test_subword_malformed,
// test_train_cli); the scratch directory is tests/support/scratch.hpp's.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/scratch.hpp"
#include "tools/cli/cli.hpp"

namespace attend::testing {

inline std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

inline bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

struct CliResult {
  int exit_code = -1;  // -1 when the child did not exit normally
  int signal = 0;      // the signal that ended it (SIGALRM: it hung)
  std::string out, err;
};

// A child started by start_attend_child: its pid, and the paths its standard
// output (empty: not a file to read back) and standard error went to.
struct CliChild {
  pid_t pid = -1;
  std::string out, err;
};

// Starts `attend ARGS...` (tools::run_cli) in a forked child given `seconds`, its
// standard streams on these paths; out_flags opens standard output (O_WRONLY
// alone for a device or FIFO that must already exist). Fork before starting any
// thread of the test: a child forked while another thread holds a lock (of the
// allocator, stdio, the loader) can hang on it. A test that needs a peer (a
// FIFO's reader, a turn arbiter) starts the child first and plays the peer on
// its own thread, then calls wait_attend_child. `in_child`, if given, runs in
// the child first (an environment variable, a resource limit; it returns false
// when it could not, and the child exits 99).
inline CliChild start_attend_child(std::vector<std::string> args, const std::string& in, const std::string& out,
                                   int out_flags, const std::string& err, int seconds,
                                   const std::function<bool()>& in_child = {}) {
  args.insert(args.begin(), "attend");
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    if (in_child && !in_child()) ::_exit(99);
    const int fd_in = ::open(in.c_str(), O_RDONLY);
    const int fd_out = ::open(out.c_str(), out_flags, 0600);
    const int fd_err = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ::dup2(fd_in, 0);
    ::dup2(fd_out, 1);
    ::dup2(fd_err, 2);
    ::alarm(static_cast<unsigned>(seconds));
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    const int code = tools::run_cli(static_cast<int>(args.size()), argv.data(), "test");
    std::fflush(nullptr);
    ::_exit(code);
  }
  return {pid, "", err};
}

// Waits for the child to end; the result's `out` is read back if the child's
// standard output went to a file.
inline CliResult wait_attend_child(const CliChild& child) {
  int status = 0;
  ::waitpid(child.pid, &status, 0);
  CliResult r;
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
  r.err = slurp(child.err);
  if (!child.out.empty()) r.out = slurp(child.out);
  return r;
}

// `attend ARGS...` run to its end; the result's `out` is left to the caller.
inline CliResult run_attend_child(std::vector<std::string> args, const std::string& in, const std::string& out,
                                  int out_flags, const std::string& err, int seconds) {
  return wait_attend_child(start_attend_child(std::move(args), in, out, out_flags, err, seconds));
}

// Starts `attend ARGS...` with `input` on stdin and standard output in a file
// of the scratch directory, in a child process given `seconds`.
inline CliChild start_attend_cli(const Scratch& s, std::vector<std::string> args, const std::string& input = "",
                                 int seconds = 60) {
  const std::string in = s.write("stdin.txt", input), out = s.path("stdout.txt");
  CliChild child = start_attend_child(std::move(args), in, out, O_WRONLY | O_CREAT | O_TRUNC, s.path("stderr.txt"), seconds);
  child.out = out;
  return child;
}

// `attend ARGS...` with `input` on stdin, in a child process given `seconds`.
inline CliResult attend_cli(const Scratch& s, std::vector<std::string> args, const std::string& input = "",
                            int seconds = 60) {
  return wait_attend_child(start_attend_cli(s, std::move(args), input, seconds));
}

}  // namespace attend::testing
