#pragma once
// attend::Error: every mistake a caller can make (a shape, dtype, axis, index or
// file problem) is reported by throwing this, with a message that names the
// operation and shows what was wrong.
#include <stdexcept>
#include <string>
#include <utility>

#include <fmt/format.h>

namespace attend {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// fail("matmul: inner dimensions differ: {} @ {}", a.shape(), b.shape());
template <class... Args>
[[noreturn]] void fail(fmt::format_string<Args...> format, Args&&... args) {
  throw Error(fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace attend
