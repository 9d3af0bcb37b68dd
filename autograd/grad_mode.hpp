#pragma once
// Switches that apply to the current thread: whether ops are recorded for
// backward (GradMode, NoGradGuard), and whether every op's outputs and
// gradients are checked for NaN and infinity (AnomalyMode), and whether every
// recorded op keeps a way to run its forward again (ReplayMode).
namespace attend {

struct GradMode {
  static bool enabled();
  static void set_enabled(bool enabled);
};

// Inside its scope no op is recorded: for evaluation, decoding, and optimizer steps.
class NoGradGuard {
 public:
  NoGradGuard() : previous_(GradMode::enabled()) { GradMode::set_enabled(false); }
  ~NoGradGuard() { GradMode::set_enabled(previous_); }
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool previous_;
};

// Turns recording on inside its scope, whatever the caller had.
class EnableGradGuard {
 public:
  EnableGradGuard() : previous_(GradMode::enabled()) { GradMode::set_enabled(true); }
  ~EnableGradGuard() { GradMode::set_enabled(previous_); }
  EnableGradGuard(const EnableGradGuard&) = delete;
  EnableGradGuard& operator=(const EnableGradGuard&) = delete;

 private:
  bool previous_;
};

// When on, the first op whose forward output or backward gradient is not finite
// throws attend::Error naming the op. Slow: for finding where a NaN comes from.
struct AnomalyMode {
  static bool enabled();
  static void set_enabled(bool enabled);
};

class AnomalyGuard {
 public:
  AnomalyGuard() : previous_(AnomalyMode::enabled()) { AnomalyMode::set_enabled(true); }
  ~AnomalyGuard() { AnomalyMode::set_enabled(previous_); }
  AnomalyGuard(const AnomalyGuard&) = delete;
  AnomalyGuard& operator=(const AnomalyGuard&) = delete;

 private:
  bool previous_;
};

// When on, every recorded op also keeps a function that runs its forward again
// from its inputs (Node::replay), so that gradcheck's per-node mode can check
// each op of a graph on its own. Off (the default), recording stores no such
// function and costs nothing more.
struct ReplayMode {
  static bool enabled();
  static void set_enabled(bool enabled);
};

class ReplayGuard {
 public:
  explicit ReplayGuard(bool on = true) : previous_(ReplayMode::enabled()) { ReplayMode::set_enabled(on); }
  ~ReplayGuard() { ReplayMode::set_enabled(previous_); }
  ReplayGuard(const ReplayGuard&) = delete;
  ReplayGuard& operator=(const ReplayGuard&) = delete;

 private:
  bool previous_;
};

}  // namespace attend
