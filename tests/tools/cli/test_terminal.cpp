// tools/cli/terminal: the progress bar's text, the attention drawing, signed maps
// (dL/dalpha) and text blocks side by side, and when output counts as a terminal.
#include <doctest/doctest.h>
#include <pty.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/error.hpp"
#include "tools/cli/terminal.hpp"

using namespace attend;
using namespace attend::tools;

TEST_CASE("durations read like a clock") {
  CHECK(format_duration(0) == "0s");
  CHECK(format_duration(59.4) == "59s");
  CHECK(format_duration(249) == "4:09");
  CHECK(format_duration(3 * 3600 + 5 * 60 + 3) == "3:05:03");
  CHECK(format_duration(-1) == "?");
}

TEST_CASE("the progress bar shows position, status and ETA") {
  ProgressBar bar("epoch 2", 100, false);
  // 25 of 100 done in 10 s: 75 left at the same pace is 30 s.
  CHECK(bar.render(25, "loss 1.500", 10.0) == "epoch 2 [######..................] 25/100  loss 1.500  ETA 30s");
  CHECK(bar.render(100, "", 40.0) == "epoch 2 [########################] 100/100  ETA 0s");
  ProgressBar open_ended("step", 0, false);
  CHECK(open_ended.render(7, "loss 2", 1.0) == "step 7  loss 2");
}

namespace {

// Runs is_terminal(stdout) in a child process whose stdout `setup` arranges, and
// returns what it said: the child's session and terminals are its own.
bool child_says_terminal(int (*setup)()) {
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    if (setup() != 0) ::_exit(2);
    ::_exit(is_terminal(stdout) ? 1 : 0);
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) != 2);
  return WEXITSTATUS(status) == 1;
}

// stdout a pipe.
int stdout_to_pipe() {
  int fds[2];
  if (::pipe(fds) != 0) return 1;
  return ::dup2(fds[1], STDOUT_FILENO) < 0 ? 1 : 0;
}

// stdout a pseudo-terminal that is this process's controlling terminal, as a
// shell in a terminal window (or ssh -t, tmux) starts a program: a new session
// whose terminal the first tty opened without O_NOCTTY becomes.
int stdout_to_own_pty() {
  int master = -1, slave = -1;
  if (::setsid() < 0 || ::openpty(&master, &slave, nullptr, nullptr, nullptr) != 0) return 1;
  if (::ioctl(slave, TIOCSCTTY, 0) != 0) return 1;
  return ::dup2(slave, STDOUT_FILENO) < 0 ? 1 : 0;
}

// stdout a pseudo-terminal that is not the process's controlling terminal: what
// Open MPI's launcher gives every rank, whether mpirun's own output is a
// terminal, a file or a pipe. The environment says nothing of it here.
int stdout_to_other_pty() {
  int master = -1, slave = -1;
  ::unsetenv("OMPI_COMM_WORLD_SIZE");
  if (::setsid() < 0 || ::openpty(&master, &slave, nullptr, nullptr, nullptr) != 0) return 1;
  return ::dup2(slave, STDOUT_FILENO) < 0 ? 1 : 0;
}

}  // namespace

// mpirun hands every rank a pseudo-terminal even for `mpirun ... > log`, and the
// bar's "\r\033[K" once went into the file (tests/mpi/cli.sh checks that end to end).
TEST_CASE("output is a terminal when it goes to the process's own terminal, not to a pipe or another pty") {
  CHECK_FALSE(child_says_terminal(stdout_to_pipe));
  CHECK(child_says_terminal(stdout_to_own_pty));
  CHECK_FALSE(child_says_terminal(stdout_to_other_pty));
  std::FILE* file = std::tmpfile();
  REQUIRE(file != nullptr);
  CHECK_FALSE(is_terminal(file));
  std::fclose(file);
}

TEST_CASE("attention is drawn with source words above their columns") {
  std::string text = attention_text({"ab", "c"}, {"x", "yy"}, {{1.0, 0.0}, {0.5, 0.5}}, true);
  CHECK(text == "   a c \n"
                "   b   \n"
                " x 9 0 \n"
                "yy 5 5 \n");
  std::string shaded = attention_text({"é"}, {"e"}, {{1.0}});
  CHECK(shaded.find("██") != std::string::npos);
  CHECK(shaded.find("é") != std::string::npos);
  CHECK_THROWS_WITH_AS(attention_text({"a"}, {"x", "y"}, {{1.0}}), "attention_text: 1 rows of weights for 2 output tokens",
                       Error);
}

// Scale 0.4 (the NaN does not count). Unicode: quarters of the scale, rounded;
// ASCII: tenths, rounded down. '+' for negative values (wanted up), '-' for positive.
//   x: -0.4 (1.0: +█ +9)   0.11 (0.275: -░ -2)   0 (blank, 0)
//   y:  0.2 (0.5: -▒ -5)  -0.29 (0.725: +▓ +7)   0.38 (0.95: -█ -9)
//   z:  0   (blank, 0)    -0.03 (0.075: blank, 0: too small for a sign)   NaN
TEST_CASE("signed maps show the sign and the size of each value against the largest") {
  const std::vector<std::vector<double>> values = {{-0.4, 0.11, 0.0}, {0.2, -0.29, 0.38}, {0.0, -0.03, NAN}};
  const std::vector<std::string> source = {"a", "bc", "d"}, output = {"x", "y", "z"};
  CHECK(signed_scale(values) == 0.4);
  CHECK(signed_text(source, output, values, true) == "  a  b  d  \n"
                                                     "     c     \n"
                                                     "x +9 -2  0 \n"
                                                     "y -5 +7 -9 \n"
                                                     "z  0  0  ? \n");
  CHECK(signed_text(source, output, values) == "  a b d \n"
                                               "    c   \n"
                                               "x +█-░  \n"
                                               "y -▒+▓-█\n"
                                               "z     ??\n");
  // The sign follows the value, not its position: flipping every value flips every sign.
  std::vector<std::vector<double>> flipped = values;
  for (auto& row : flipped)
    for (double& v : row) v = -v;
  CHECK(signed_text(source, output, flipped, true) == "  a  b  d  \n"
                                                      "     c     \n"
                                                      "x -9 +2  0 \n"
                                                      "y +5 -7 +9 \n"
                                                      "z  0  0  ? \n");
  const std::string legend = signed_legend(0.4, true);
  CHECK(legend.find("+ wanted up (dL/dalpha < 0: the loss falls if it grows), - wanted down (dL/dalpha > 0)") == 0);
  CHECK(legend.find("k/10 of 0.4 (the largest)") != std::string::npos);
  CHECK(signed_legend(0.4).find("█ |dL/dα| = 0.4 (the largest)") != std::string::npos);
  CHECK_THROWS_WITH_AS(signed_text({"a"}, {"x"}, {{1.0, 2.0}}), "signed_text: a row has 2 values for 1 source tokens",
                       Error);
}

TEST_CASE("an all-zero signed map is blank and its legend says so") {
  const std::vector<std::vector<double>> zeros = {{0.0, -0.0}, {0.0, 0.0}};
  CHECK(signed_scale(zeros) == 0.0);
  CHECK(signed_text({"a", "b"}, {"x", "y"}, zeros) == "  a b \nx     \ny     \n");
  CHECK(signed_text({"a", "b"}, {"x", "y"}, zeros, true) == "  a  b  \nx  0  0 \ny  0  0 \n");
  CHECK(signed_legend(0.0, true) == "dL/dalpha is 0 everywhere: no weight changes the loss");
}

TEST_CASE("blocks of text are put side by side, padded by the characters they show") {
  CHECK(side_by_side("ab\nc\n", "1\n2\n3\n", 2) == "ab  1\nc   2\n    3\n");
  CHECK(side_by_side("é\nab\n", "1\n2\n", 1) == "é  1\nab 2\n");  // é is two bytes but one column
  CHECK(side_by_side("a\nb\nc\n", "1\n", 1) == "a 1\nb\nc\n");
}
