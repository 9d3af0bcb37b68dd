#pragma once
// Reading sentences a chunk at a time, so that `attend translate` holds only
// the lines it is translating, however large the file. Every line is checked
// as it is read: at most limits::kMaxLineBytes bytes (a longer one is refused
// without being held in memory) and valid UTF-8; a final '\r' (CRLF files) is
// dropped. Errors name the input and the line: "translate: big.txt:7: ...".
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

namespace attend::tools {

class LineReader {
 public:
  // path "" or "-": standard input. A path must be a regular file (not a
  // directory or a FIFO). `op` starts every error message.
  LineReader(const std::string& path, std::string op);
  ~LineReader();
  LineReader(const LineReader&) = delete;
  LineReader& operator=(const LineReader&) = delete;

  // Replaces `lines` with the next lines: at most max_lines of them, and no more
  // once max_bytes have been read (a chunk holds at least one line). Returns
  // false when the input is exhausted and `lines` is empty.
  bool next(std::vector<std::string>& lines, std::size_t max_lines, std::size_t max_bytes);
  std::int64_t lines_read() const { return lines_read_; }
  const std::string& name() const { return name_; }
  bool is_stdin() const { return file_ == stdin; }

 private:
  bool read_line(std::string& line);  // false at the end of the input
  void fill();

  std::string op_, name_;
  std::FILE* file_ = nullptr;
  std::vector<char> buffer_;
  std::size_t begin_ = 0, end_ = 0;
  bool eof_ = false;
  std::int64_t lines_read_ = 0;
};

// Reads the whole input once and counts its lines, checking each: a file is
// refused before anything is translated. Memory stays one chunk of lines.
// `check`, when given, is called with each line and where it is ("FILE:LINE"),
// and throws Error for a line the caller cannot take (translate: too many tokens).
using LineCheck = std::function<void(const std::string& line, const std::string& where)>;
std::int64_t count_checked_lines(const std::string& path, const std::string& op, const LineCheck& check = {});

}  // namespace attend::tools
