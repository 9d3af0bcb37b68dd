// StopOnInterrupt (bindings.hpp): Ctrl-C as a stop request to C++ work that
// checks a flag, then as KeyboardInterrupt once that work has stopped.
#include <signal.h>

#include <atomic>

#include "bindings.hpp"

namespace attend_py {
namespace {

std::atomic<bool> stop_requested{false};

extern "C" void on_sigint(int) { stop_requested = true; }

}  // namespace

StopOnInterrupt::StopOnInterrupt() {
  stop_requested = false;
  struct sigaction action {};
  action.sa_handler = on_sigint;
  sigemptyset(&action.sa_mask);
  installed_ = ::sigaction(SIGINT, &action, &previous_) == 0;
}

StopOnInterrupt::~StopOnInterrupt() {
  if (installed_) ::sigaction(SIGINT, &previous_, nullptr);
}

const std::atomic<bool>* StopOnInterrupt::stop() const { return &stop_requested; }

bool StopOnInterrupt::stopped() const { return stop_requested.load(); }

void StopOnInterrupt::raise_if_stopped() const {
  if (!stopped()) return;
  PyErr_SetNone(PyExc_KeyboardInterrupt);
  throw py::error_already_set();
}

}  // namespace attend_py
