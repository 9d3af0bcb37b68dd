#include "tools/cli/checks.hpp"

#include <cmath>
#include <filesystem>
#include <limits>

#include <fmt/format.h>

#include "core/io/limits.hpp"
#include "core/io/printable.hpp"

namespace attend::tools::check {

// "in 1..65536", or ">= 0" when there is no upper bound to speak of.
CLI::Validator integer(std::int64_t lo, std::int64_t hi, bool from_limits) {
  const std::string range =
      hi == std::numeric_limits<std::int64_t>::max() ? fmt::format(">= {}", lo) : fmt::format("in {}..{}", lo, hi);
  return CLI::Validator(
      [lo, hi, range, from_limits](std::string& input) -> std::string {
        std::int64_t value = 0;
        if (!CLI::detail::lexical_cast(input, value) || value < lo || value > hi)
          return fmt::format("{} is not an integer {}{}", printable(input), range,
                             from_limits ? " (the limit is in core/io/limits.hpp)" : "");
        return {};
      },
      range);
}

CLI::Validator number(double lo, double hi, bool lo_open) {
  const std::string range = hi == std::numeric_limits<double>::max()
                                ? fmt::format("{} {:g}", lo_open ? ">" : ">=", lo)
                                : fmt::format("in {}{:g}, {:g}]", lo_open ? "(" : "[", lo, hi);
  return CLI::Validator(
      [lo, hi, lo_open, range](std::string& input) -> std::string {
        double value = 0;
        const bool parsed = CLI::detail::lexical_cast(input, value);
        if (!parsed || !std::isfinite(value) || value < lo || value > hi || (lo_open && value == lo))
          return fmt::format("{} is not a finite number {}", printable(input), range);
        return {};
      },
      range);
}

CLI::Validator out_directory() {
  return CLI::Validator(
      [](std::string& input) -> std::string {
        if (input.empty()) return "the directory name is empty";
        std::error_code ec;
        const auto status = std::filesystem::status(input, ec);
        if (std::filesystem::exists(status) && !std::filesystem::is_directory(status))
          return fmt::format("{} exists and is not a directory", printable(input));
        return {};
      },
      "DIR");
}

CLI::Validator threads() { return integer(1, limits::kMaxThreads, true); }

CLI::Validator seed() {
  constexpr std::uint64_t hi = std::numeric_limits<std::uint64_t>::max();
  const std::string range = fmt::format("in 0..{}", hi);
  return CLI::Validator(
      [range](std::string& input) -> std::string {
        // Digits only, read with an overflow check: a parser's own conversion
        // may take "-1" or 10^30 and wrap it into range.
        std::uint64_t value = 0;
        bool ok = !input.empty() && input.size() <= 20;
        for (char c : input)
          ok = ok && c >= '0' && c <= '9' && !__builtin_mul_overflow(value, 10u, &value) &&
               !__builtin_add_overflow(value, static_cast<std::uint64_t>(c - '0'), &value);
        return ok ? std::string() : fmt::format("{} is not an integer {} (the generator's seed is 64 bits)", printable(input), range);
      },
      range);
}

}  // namespace attend::tools::check
