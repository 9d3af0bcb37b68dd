#pragma once
// Terminal output: a progress bar that redraws itself on a terminal and falls
// back to plain log lines when the output is a file or a pipe, and attention
// weights drawn as shaded cells (source words across, output words down).
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

namespace attend::tools {

// Whether the stream writes to this process's controlling terminal: a pipe, a file, or
// a pseudo-terminal that is not its own (mpirun hands one to each rank) is not.
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

// Signed values (e.g. dL/dalpha) laid out like attention_text. Each cell is
// measured against the scale, the largest finite |value|: '+' marks a negative
// value (the loss falls if that weight grows: wanted up), '-' a positive one
// (wanted down), followed by the size as a shade ░▒▓█ (quarters of the scale, rounded)
// or, when `ascii`, a digit 0-9 (tenths, rounded down) and a space. A cell whose
// size rounds to nothing gets no sign (blank, or " 0 "), so every sign drawn is
// one the scale can show; "??" / " ? " marks a non-finite value.
std::string signed_text(const std::vector<std::string>& source, const std::vector<std::string>& output,
                        const std::vector<std::vector<double>>& values, bool ascii = false);
// The scale signed_text uses: the largest finite |value|, 0 if there is none.
double signed_scale(const std::vector<std::vector<double>>& values);
// One line explaining signed_text's glyphs and the scale, without a newline.
std::string signed_legend(double scale, bool ascii = false);

// Two blocks of text next to each other, line by line: the left one padded to
// its widest line (counted in UTF-8 characters) plus `gap` spaces.
std::string side_by_side(const std::string& left, const std::string& right, std::size_t gap = 4);

}  // namespace attend::tools
