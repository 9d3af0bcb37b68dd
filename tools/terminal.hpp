#pragma once
// Terminal output: a progress bar that redraws itself on a terminal and falls
// back to plain log lines when the output is a file or a pipe, and attention
// weights drawn as shaded cells (source words across, output words down).
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

namespace attend::tools {

bool is_terminal(std::FILE* stream);

// "1:05:03", "4:09" or "12s".
std::string format_duration(double seconds);

class ProgressBar {
 public:
  // total may be 0 when unknown. On a terminal the bar redraws at most ~10 times a
  // second; otherwise a plain line is written every `log_every_seconds`.
  ProgressBar(std::string label, long total, bool terminal, double log_every_seconds = 10.0, std::FILE* out = stdout);
  // `status` is appended, e.g. "loss 2.314  12.3k tok/s".
  void update(long done, const std::string& status);
  void finish(const std::string& status);  // the final line, always printed

  // The text of one redraw, for tests.
  std::string render(long done, const std::string& status, double elapsed_seconds) const;

 private:
  std::string label_;
  long total_;
  bool terminal_;
  double log_every_;
  std::FILE* out_;
  std::chrono::steady_clock::time_point start_, last_draw_;
  bool drawn_ = false;
};

// Attention weights as text: one row per output token, one column per source
// token, each cell shaded by its weight with " ░▒▓█" (or digits 0-9 when
// `ascii`), with the source words written vertically above the columns.
std::string attention_text(const std::vector<std::string>& source, const std::vector<std::string>& output,
                           const std::vector<std::vector<double>>& weights, bool ascii = false);

}  // namespace attend::tools
