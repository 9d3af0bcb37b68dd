#include "bench/turns/bench_turns.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "core/error.hpp"

namespace attend::tools {

namespace {

void require_fifo(const std::string& path) {
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0) fail("bench: --turn-fifos: {}: {}", path, std::strerror(errno));
  if (!S_ISFIFO(st.st_mode)) fail("bench: --turn-fifos: {} is not a FIFO (make one with mkfifo)", path);
}

}  // namespace

Turns::Turns(const std::string& in_path, const std::string& out_path, int steps, int warmup, int timeout_seconds)
    : steps_(steps), warmup_(warmup), timeout_ms_(timeout_seconds * 1000), in_path_(in_path), out_path_(out_path) {
  if (steps < 1) fail("bench: --turn-steps must be at least 1, not {}", steps);
  require_fifo(in_path);
  require_fifo(out_path);
  // A FIFO's write end opens (non-blocking) only once a reader has it: retry
  // until the arbiter opens it, then wait on IN with poll, never in open().
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms_);
  while ((out_ = ::open(out_path.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC)) < 0) {
    if (errno != ENXIO && errno != EINTR) fail("bench: --turn-fifos: {}: {}", out_path, std::strerror(errno));
    if (std::chrono::steady_clock::now() > deadline)
      fail("bench: --turn-fifos: nobody opened {} for reading in {} s", out_path, timeout_seconds);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  in_ = ::open(in_path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (in_ < 0) {
    const int e = errno;
    ::close(out_);
    fail("bench: --turn-fifos: {}: {}", in_path, std::strerror(e));
  }
  // The arbiter may go away: a write to a FIFO without a reader then fails
  // with EPIPE instead of killing the process.
  ::signal(SIGPIPE, SIG_IGN);
  send('r');
}

Turns::~Turns() { close_both(); }

void Turns::close_both() {
  if (in_ >= 0) ::close(in_);
  if (out_ >= 0) ::close(out_);
  in_ = out_ = -1;
}

void Turns::wait_for_go() {
  // poll() alone cannot tell that the arbiter has closed its end: Linux reports
  // POLLHUP on a FIFO only if a writer came and went after our open, and the
  // arbiter may have opened IN before us. So poll in short slices and try a
  // non-blocking read after each: 0 bytes means no writer. Before the first go
  // that is an arbiter still starting; after it, one that has left.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms_);
  for (;;) {
    if (std::chrono::steady_clock::now() > deadline)
      fail("bench: --turn-fifos: no turn given on {} in {} s", in_path_, timeout_ms_ / 1000);
    pollfd p{in_, POLLIN, 0};
    if (::poll(&p, 1, 50) < 0 && errno != EINTR) fail("bench: --turn-fifos: {}: {}", in_path_, std::strerror(errno));
    char c = 0;
    const ssize_t n = ::read(in_, &c, 1);
    if (n == 1) return;
    if (n == 0 && turns_ > 0) {  // the arbiter closed its end: run on without turns
      free_ = true;
      return;
    }
    if (n == 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    if (n < 0 && errno != EAGAIN && errno != EINTR) fail("bench: --turn-fifos: {}: {}", in_path_, std::strerror(errno));
  }
}

void Turns::send(char c) {
  for (;;) {
    if (::write(out_, &c, 1) == 1) return;
    if (errno == EPIPE) {  // nobody reads any more: no more turns
      free_ = true;
      return;
    }
    if (errno != EINTR && errno != EAGAIN) fail("bench: --turn-fifos: {}: {}", out_path_, std::strerror(errno));
    std::this_thread::sleep_for(std::chrono::milliseconds(1));  // a full FIFO: the arbiter is behind
  }
}

bool Turns::before_step(int i) {
  const int t = i - warmup_;  // the timed step's index; the warm-up belongs to the first turn
  if (free_ || !(i == 0 || (t > 0 && t % steps_ == 0))) return false;
  wait_for_go();
  if (free_) return false;
  ++turns_;
  return t > 0;
}

void Turns::after_step(int i, bool last) {
  if (free_) return;
  if (last) {
    send('e');
    close_both();
    free_ = true;
  } else if (const int t = i - warmup_; t >= 0 && (t + 1) % steps_ == 0) {
    send('t');
  }
}

}  // namespace attend::tools
