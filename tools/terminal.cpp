#include "tools/terminal.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/error.hpp"

namespace attend::tools {

bool is_terminal(std::FILE* stream) { return isatty(fileno(stream)) != 0; }

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

std::string attention_text(const std::vector<std::string>& source, const std::vector<std::string>& output,
                           const std::vector<std::vector<double>>& weights, bool ascii) {
  if (weights.size() != output.size())
    fail("attention_text: {} rows of weights for {} output tokens", weights.size(), output.size());
  for (const auto& row : weights)
    if (row.size() != source.size())
      fail("attention_text: a row has {} weights for {} source tokens", row.size(), source.size());
  // Width of one cell: 2 columns, so the picture stays roughly square.
  static const char* kShades[] = {"  ", "░░", "▒▒", "▓▓", "██"};
  std::size_t label_width = 1;
  for (const auto& w : output) label_width = std::max(label_width, w.size());
  std::string out;
  // Source words written downwards, one character per line, above their columns
  // (bytes of multi-byte UTF-8 characters are kept together).
  std::vector<std::vector<std::string>> letters;
  for (const auto& w : source) {
    std::vector<std::string> chars;
    for (std::size_t i = 0; i < w.size();) {
      std::size_t n = 1;
      const unsigned char c = static_cast<unsigned char>(w[i]);
      if (c >= 0xF0) n = 4;
      else if (c >= 0xE0) n = 3;
      else if (c >= 0xC0) n = 2;
      chars.push_back(w.substr(i, n));
      i += n;
    }
    letters.push_back(chars);
  }
  std::size_t rows_of_letters = 0;
  for (const auto& l : letters) rows_of_letters = std::max(rows_of_letters, l.size());
  for (std::size_t r = 0; r < rows_of_letters; ++r) {
    out += std::string(label_width + 1, ' ');
    for (const auto& l : letters) out += (r < l.size() ? l[r] : " ") + std::string(" ");
    out += '\n';
  }
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

}  // namespace attend::tools
