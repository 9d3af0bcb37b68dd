#pragma once
// Validators for the command line's numbers and paths, with messages a person
// can read ("--hidden: 0 is not an integer in 1..65536", never a 309-digit
// range), finite numbers only (nan and inf are refused), and the limits of
// core/io/limits.hpp named where they apply.
#include <cstdint>
#include <string>

#include <CLI/CLI.hpp>

namespace attend::tools::check {

// An integer in lo..hi (hi = INT64_MAX: no upper bound). With from_limits, the
// message says where hi comes from.
CLI::Validator integer(std::int64_t lo, std::int64_t hi, bool from_limits = false);
// A finite number in [lo, hi] (or (lo, hi] with lo_open; hi = DBL_MAX: no upper bound).
CLI::Validator number(double lo, double hi, bool lo_open = false);
// A directory to write into: not empty, and not an existing file or anything
// else that is not a directory (it may not exist yet).
CLI::Validator out_directory();
// --threads: 1..kMaxThreads.
CLI::Validator threads();
// --seed: an integer the generator takes whole, 0..2^64-1 (its seed is a
// uint64); a larger or negative one is refused, never wrapped.
CLI::Validator seed();

}  // namespace attend::tools::check
