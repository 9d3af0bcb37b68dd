#include "tools/cli/line_reader.hpp"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/io/file_io.hpp"
#include "core/io/limits.hpp"
#include "models/data/tokenizer.hpp"

namespace attend::tools {

namespace {

constexpr std::size_t kBufferBytes = 1 << 16;

// The byte at which s stops being valid UTF-8 (from 0).
std::size_t first_invalid_byte(const std::string& s) {
  std::size_t at = 0;
  for (char32_t c = 0; at < s.size();) {
    int length = 1;
    if (!decode_utf8(s, at, c, length)) break;
    at += static_cast<std::size_t>(length);
  }
  return at;
}

}  // namespace

LineReader::LineReader(const std::string& path, std::string op) : op_(std::move(op)) {
  if (path.empty() || path == "-") {
    name_ = "<stdin>";
    file_ = stdin;
  } else {
    name_ = path;
    InputFile check(path, op_);  // refuses a directory, a FIFO or a device, with the reason
    file_ = std::fopen(path.c_str(), "rb");
    if (file_ == nullptr) fail("{}: {}: cannot open: {}", op_, path, std::strerror(errno));
  }
  buffer_.resize(kBufferBytes);
}

LineReader::~LineReader() {
  if (file_ != nullptr && file_ != stdin) std::fclose(file_);
}

void LineReader::fill() {
  begin_ = 0;
  end_ = std::fread(buffer_.data(), 1, buffer_.size(), file_);
  if (end_ == 0) {
    if (std::ferror(file_)) fail("{}: {}: cannot read: {}", op_, name_, std::strerror(errno));
    eof_ = true;
  }
}

bool LineReader::read_line(std::string& line) {
  line.clear();
  bool any = false;
  // A line may hold kMaxLineBytes bytes and a '\r'; one more byte proves it too long.
  const std::size_t most = static_cast<std::size_t>(limits::kMaxLineBytes) + 1;
  std::size_t length = 0;  // bytes of the line, counted even when no longer kept
  for (;;) {
    if (begin_ == end_) {
      if (eof_) break;
      fill();
      if (eof_) break;
    }
    any = true;
    const char* start = buffer_.data() + begin_;
    const char* newline = static_cast<const char*>(std::memchr(start, '\n', end_ - begin_));
    const std::size_t n = newline ? static_cast<std::size_t>(newline - start) : end_ - begin_;
    if (line.size() < most) line.append(start, std::min(n, most - line.size()));
    length += n;
    begin_ += n;
    if (newline) {
      ++begin_;
      break;
    }
  }
  if (!any) return false;
  ++lines_read_;
  if (!line.empty() && line.back() == '\r' && length == line.size()) {
    line.pop_back();
    --length;
  }
  if (length > static_cast<std::size_t>(limits::kMaxLineBytes))
    fail("{}: {}:{}: the line has {} bytes, more than the limit of {} (core/io/limits.hpp)", op_, name_, lines_read_,
         length, limits::kMaxLineBytes);
  if (!valid_utf8(line))
    fail("{}: {}:{}: invalid UTF-8 at byte {} (from 0)", op_, name_, lines_read_, first_invalid_byte(line));
  return true;
}

bool LineReader::next(std::vector<std::string>& lines, std::size_t max_lines, std::size_t max_bytes) {
  lines.clear();
  std::size_t bytes = 0;
  std::string line;
  while (lines.size() < std::max<std::size_t>(max_lines, 1) && (lines.empty() || bytes < max_bytes)) {
    if (!read_line(line)) break;
    bytes += line.size() + 1;
    lines.push_back(std::move(line));
  }
  return !lines.empty();
}

std::int64_t count_checked_lines(const std::string& path, const std::string& op, const LineCheck& check) {
  LineReader reader(path, op);
  std::vector<std::string> lines;
  while (reader.next(lines, 4096, std::size_t{8} << 20)) {
    if (!check) continue;
    const std::int64_t first = reader.lines_read() - static_cast<std::int64_t>(lines.size()) + 1;
    for (std::size_t i = 0; i < lines.size(); ++i)
      check(lines[i], fmt::format("{}:{}", reader.name(), first + static_cast<std::int64_t>(i)));
  }
  return reader.lines_read();
}

}  // namespace attend::tools
