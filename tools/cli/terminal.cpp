#include "tools/cli/terminal.hpp"

#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string_view>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/io/file_io.hpp"

namespace attend::tools {

// A stream is a terminal when it writes to this process's own terminal: the
// controlling terminal of its session (a shell's, ssh -t's, tmux's). isatty
// alone is not enough: Open MPI's launcher gives each process it starts a
// pseudo-terminal for stdout whatever mpirun's own output is, so `mpirun ... >
// log` looked like a terminal and the bar's carriage returns went into the
// file. That pseudo-terminal is no process's controlling terminal, so tcgetsid
// refuses it. Asked of the descriptor written, in each process: no guess from
// the environment.
bool is_terminal(std::FILE* stream) {
  const int fd = fileno(stream);
  return fd >= 0 && isatty(fd) != 0 && tcgetsid(fd) == getsid(0);
}

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  long s = std::lround(seconds);
  if (s < 60) return fmt::format("{}s", s);
  if (s < 3600) return fmt::format("{}:{:02}", s / 60, s % 60);
  return fmt::format("{}:{:02}:{:02}", s / 3600, (s / 60) % 60, s % 60);
}

ProgressBar::ProgressBar(std::string label, long total, bool terminal, double log_every_seconds, std::FILE* out)
    : label_(std::move(label)), total_(total), terminal_(terminal), log_every_(log_every_seconds), out_(out) {
  start_ = last_draw_ = std::chrono::steady_clock::now();
}

std::string ProgressBar::render(long done, const std::string& status, double elapsed) const {
  std::string text = label_;
  if (total_ > 0) {
    constexpr int kWidth = 24;
    const double fraction = std::clamp(static_cast<double>(done) / static_cast<double>(total_), 0.0, 1.0);
    const int filled = static_cast<int>(fraction * kWidth);
    text += fmt::format(" [{}{}] {}/{}", std::string(static_cast<std::size_t>(filled), '#'),
                        std::string(static_cast<std::size_t>(kWidth - filled), '.'), done, total_);
    const double eta = done > 0 ? elapsed * (static_cast<double>(total_ - done) / static_cast<double>(done)) : NAN;
    if (!status.empty()) text += "  " + status;
    text += fmt::format("  ETA {}", done >= total_ ? "0s" : format_duration(eta));
  } else {
    text += fmt::format(" {}", done);
    if (!status.empty()) text += "  " + status;
  }
  return text;
}

void ProgressBar::update(long done, const std::string& status) {
  const auto now = std::chrono::steady_clock::now();
  const double since_draw = std::chrono::duration<double>(now - last_draw_).count();
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  if (terminal_) {
    if (drawn_ && since_draw < 0.1) return;
    fmt::print(out_, "\r\033[K{}", render(done, status, elapsed));
  } else {
    if (drawn_ && since_draw < log_every_) return;
    fmt::print(out_, "{}\n", render(done, status, elapsed));
  }
  std::fflush(out_);
  drawn_ = true;
  last_draw_ = now;
}

void ProgressBar::finish(const std::string& status) {
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  if (terminal_) fmt::print(out_, "\r\033[K");
  fmt::print(out_, "{}  ({})\n", render(total_ > 0 ? total_ : 0, status, elapsed), format_duration(elapsed));
  std::fflush(out_);
}

namespace {

void check_map_shape(const char* op, const char* noun, const std::vector<std::string>& source,
                     const std::vector<std::string>& output, const std::vector<std::vector<double>>& values) {
  if (values.size() != output.size())
    fail("{}: {} rows of {} for {} output tokens", op, values.size(), noun, output.size());
  for (const auto& row : values)
    if (row.size() != source.size())
      fail("{}: a row has {} {} for {} source tokens", op, row.size(), noun, source.size());
}

// The UTF-8 characters of a word, each kept whole.
std::vector<std::string> characters(const std::string& word) {
  std::vector<std::string> chars;
  for (std::size_t i = 0; i < word.size();) {
    std::size_t n = 1;
    const unsigned char c = static_cast<unsigned char>(word[i]);
    if (c >= 0xF0) n = 4;
    else if (c >= 0xE0) n = 3;
    else if (c >= 0xC0) n = 2;
    chars.push_back(word.substr(i, n));
    i += n;
  }
  return chars;
}

std::size_t label_width_of(const std::vector<std::string>& output) {
  std::size_t width = 1;
  for (const auto& w : output) width = std::max(width, w.size());
  return width;
}

// Source words written downwards, one character per line, above their columns,
// each column `column_width` wide.
std::string source_header(const std::vector<std::string>& source, std::size_t label_width, std::size_t column_width) {
  std::vector<std::vector<std::string>> letters;
  for (const auto& w : source) letters.push_back(characters(w));
  std::size_t rows_of_letters = 0;
  for (const auto& l : letters) rows_of_letters = std::max(rows_of_letters, l.size());
  const std::string pad(column_width - 1, ' ');
  std::string out;
  for (std::size_t r = 0; r < rows_of_letters; ++r) {
    out += std::string(label_width + 1, ' ');
    for (const auto& l : letters) out += (r < l.size() ? l[r] : " ") + pad;
    out += '\n';
  }
  return out;
}

std::size_t display_width(std::string_view line) {
  std::size_t n = 0;
  for (char c : line) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;  // continuation bytes take no column
  return n;
}

}  // namespace

std::string attention_text(const std::vector<std::string>& source, const std::vector<std::string>& output,
                           const std::vector<std::vector<double>>& weights, bool ascii) {
  check_map_shape("attention_text", "weights", source, output, weights);
  // Width of one cell: 2 columns, so the picture stays roughly square.
  static const char* kShades[] = {"  ", "░░", "▒▒", "▓▓", "██"};
  const std::size_t label_width = label_width_of(output);
  std::string out = source_header(source, label_width, 2);
  for (std::size_t t = 0; t < output.size(); ++t) {
    out += fmt::format("{:>{}} ", output[t], label_width);
    for (double w : weights[t]) {
      const int level = static_cast<int>(std::clamp(w, 0.0, 1.0) * 4.0 + 0.5);
      if (ascii) out += fmt::format("{} ", std::min(9, static_cast<int>(std::clamp(w, 0.0, 1.0) * 10.0)));
      else out += kShades[level];
    }
    out += '\n';
  }
  return out;
}

double signed_scale(const std::vector<std::vector<double>>& values) {
  double scale = 0;
  for (const auto& row : values)
    for (double v : row)
      if (std::isfinite(v)) scale = std::max(scale, std::abs(v));
  return scale;
}

std::string signed_text(const std::vector<std::string>& source, const std::vector<std::string>& output,
                        const std::vector<std::vector<double>>& values, bool ascii) {
  check_map_shape("signed_text", "values", source, output, values);
  static const char* kShades[] = {" ", "░", "▒", "▓", "█"};
  const double scale = signed_scale(values);
  // ASCII cells need a sign, a digit and a space to stay readable: 3 columns.
  const std::size_t label_width = label_width_of(output);
  std::string out = source_header(source, label_width, ascii ? 3 : 2);
  for (std::size_t t = 0; t < output.size(); ++t) {
    out += fmt::format("{:>{}} ", output[t], label_width);
    for (double v : values[t]) {
      if (!std::isfinite(v)) {
        out += ascii ? " ? " : "??";
        continue;
      }
      const double size = scale > 0 ? std::abs(v) / scale : 0.0;
      const char* sign = v < 0 ? "+" : "-";  // negative: the loss falls if the weight grows
      if (ascii) {
        const int digit = std::min(9, static_cast<int>(size * 10.0));
        out += digit == 0 ? std::string(" 0 ") : fmt::format("{}{} ", sign, digit);
      } else {
        const int level = static_cast<int>(size * 4.0 + 0.5);
        out += level == 0 ? std::string("  ") : std::string(sign) + kShades[level];
      }
    }
    out += '\n';
  }
  return out;
}

std::string signed_legend(double scale, bool ascii) {
  const char* d = ascii ? "dL/dalpha" : "dL/dα";
  if (!(scale > 0)) return fmt::format("{} is 0 everywhere: no weight changes the loss", d);
  std::string out = fmt::format("+ wanted up ({0} < 0: the loss falls if it grows), - wanted down ({0} > 0); ", d);
  if (ascii)
    out += fmt::format("digit k: |{}| at least k/10 of {:.3g} (the largest), 0: under 1/10", d, scale);
  else
    out += fmt::format("█ |{}| = {:.3g} (the largest), ▓ 3/4, ▒ 1/2, ░ 1/4 of it, blank: under 1/8", d, scale);
  return out;
}

std::string side_by_side(const std::string& left, const std::string& right, std::size_t gap) {
  const std::vector<std::string> a = split_lines(left), b = split_lines(right);
  std::size_t width = 0;
  for (const auto& l : a) width = std::max(width, display_width(l));
  std::string out;
  for (std::size_t i = 0; i < std::max(a.size(), b.size()); ++i) {
    const std::string l = i < a.size() ? a[i] : "";
    if (i < b.size()) out += l + std::string(width - display_width(l) + gap, ' ') + b[i];
    else out += l;
    out += '\n';
  }
  return out;
}

}  // namespace attend::tools
