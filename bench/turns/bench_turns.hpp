// Taking turns with another process through two FIFOs, so that `attend bench`
// and its PyTorch twin (bench/torch_seq2seq.py, which speaks the same protocol)
// can time their training steps in short alternating turns inside one round,
// and a slow spell of the machine falls on both alike.
//
// The protocol, one byte at a time, with an arbiter (bench/compare_seq2seq.sh,
// TURNS=N) holding the other ends:
//   once ready         write 'r' to OUT     (the model and data are made)
//   before each turn   read 1 byte from IN  (wait for the go; EOF: no more turns)
//   after each turn    write 't' to OUT
//   after the last     write 'e' to OUT and close both
// A turn is `steps` timed training steps. The first turn also runs the warm-up
// steps before them, and every later turn one untimed step, because the other
// process's turn has left this one's caches cold: without it, each turn's
// first step times the refill of the caches, which weighs most on the side
// with the fewest steps in a turn and skews the ratio. The arbiter
// lets one process run at a time.
#pragma once

#include <string>

namespace attend::tools {

class Turns {
 public:
  // Opens OUT for writing (waiting up to timeout_seconds for the arbiter to
  // open its end) and then IN for reading, and writes 'r'. Both must be FIFOs.
  Turns(const std::string& in_path, const std::string& out_path, int steps, int warmup, int timeout_seconds = 300);
  ~Turns();
  Turns(const Turns&) = delete;
  Turns& operator=(const Turns&) = delete;

  // Call before training step i (0-based, warm-up included) and after it:
  // before_step waits for the go at the start of each turn, and returns true
  // if an untimed step should run first; after_step reports the end of a
  // turn, or with `last` the end of them all.
  bool before_step(int i);
  void after_step(int i, bool last);

  int turns_taken() const { return turns_; }

 private:
  void wait_for_go();
  void send(char c);
  void close_both();

  int in_ = -1, out_ = -1;
  int steps_, warmup_, timeout_ms_;
  int turns_ = 0;
  bool free_ = false;  // the arbiter closed IN: run without turns
  std::string in_path_, out_path_;
};

}  // namespace attend::tools
