// The grader of the exercises (docs/exercises.md): each answer of
// exercises.hpp becomes the backward of a custom op whose forward is attend's
// own (catalogue*.cpp), and gradcheck compares it with finite differences. A
// wrong answer is reported with the gradient and the element that disagree,
// the learner's own value there, and a hint: the idea, then the shape of the
// formula, then the formula, one stage more each time it fails again.
//
//   exercises [--only NAME] [--seed N] [--hint 1|2|3] [--attempts FILE]
//
//   --seed N        the inputs' seed; without it a fresh one, printed, so that
//                   no answer can be fitted to one input and any run can be replayed
//   --hint K        show the hints up to stage K for a failure
//   --attempts FILE count each exercise's failures in FILE, and show one more
//                   hint stage at each (the target `exercises` passes one)
//
// Exit 0 when every exercise graded passes. Built with answers.cpp (the target
// `exercises`, which runs it), and by the test suite with solutions.cpp,
// stubs.cpp and wrong.cpp.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/io/file_io.hpp"
#include "tests/exercises/grader.hpp"

namespace attend::exercises::grader {
namespace {

// What grading one exercise found. A stub (nothing was written) is not an
// attempt: it must not use up the hints of an exercise not yet begun.
enum class Result { pass, fail, nothing_written };

const char* const kStageNames[3] = {"the idea", "the shape of the formula", "the formula"};

void print_hints(const Exercise& e, int stage) {
  for (int k = 0; k < stage; ++k)
    std::printf("     hint %d of 3 (%s): %s\n", k + 1, kStageNames[k], e.hints[static_cast<std::size_t>(k)]);
  if (stage < 3) std::printf("     (fail again for the next hint, or pass --hint %d)\n", stage + 1);
}

std::int64_t flat_index(const Shape& shape, const std::vector<std::int64_t>& index) {
  std::int64_t flat = 0;
  for (std::size_t a = 0; a < index.size(); ++a) flat = flat * shape[static_cast<int>(a)] + index[a];
  return flat;
}

bool wrote_nothing(const Attempt& at) {
  for (const Tensor& t : at.yours)
    for (double x : t.to_vector())
      if (x != 0) return false;
  return true;
}

// Reports the first wrong input of a failed gradcheck: fail, or nothing_written.
Result report_wrong(int number, const Exercise& e, const Check& c, const GradcheckReport& r, int stage) {
  const Attempt& at = *c.attempt;
  for (const InputReport& in : r.inputs) {
    if (in.passed) continue;
    const std::size_t i = static_cast<std::size_t>(in.input);
    const bool assigned = at.assigned.size() > i && at.assigned[i];
    // The element furthest out of tolerance; for an assignment, where the erased
    // seed shows most is no better a place than any, so the largest gradient.
    ElementCheck shown = in.worst;
    if (assigned)
      for (const ElementCheck& f : in.failures)
        if (std::abs(f.numeric) > std::abs(shown.numeric)) shown = f;
    const std::string where = fmt::format("[{}]", fmt::join(shown.index, ", "));
    const std::vector<double> own = at.yours.size() > i ? at.yours[i].to_vector() : std::vector<double>{};
    auto yours_at = [&](const ElementCheck& c) {  // + 0.0: a -0 prints as 0
      return (own.empty() ? c.analytic : own[static_cast<std::size_t>(flat_index(in.shape, c.index))]) + 0.0;
    };
    const double yours = yours_at(shown);
    std::printf("FAIL %d. %s%s: dL/d%s wrong at %s (yours %.6g, finite differences %.6g)\n", number, e.name,
                c.label.c_str(), in.name.c_str(), where.c_str(), yours, shown.numeric);
    if (wrote_nothing(at)) {
      std::printf("     nothing was written: write %s in tests/exercises/answers.cpp\n", e.name);
      return Result::nothing_written;
    }
    if (assigned) {
      bool right = true;  // at every failing element listed
      for (const ElementCheck& f : in.failures)
        right = right && std::abs(yours_at(f) - f.numeric) <= 1e-5 + 1e-3 * std::abs(f.numeric);
      std::printf("     %s assigned (d%s = ...): the slot already held gradient (other uses of %s; here the "
                  "grader's random seed), which that erased; add to it (d%s += ...)\n",
                  right ? "the values are right but" : "the values are wrong, and", in.name.c_str(),
                  in.name.c_str(), in.name.c_str());
      if (right) return Result::fail;
    }
    print_hints(e, stage);
    return Result::fail;
  }
  // Every input's gradient right, and yet an op inside fn does not add into its inputs' slots.
  std::printf("FAIL %d. %s%s: %s\n", number, e.name, c.label.c_str(), r.first_wrong_node_summary().c_str());
  return Result::fail;
}

Result grade(int number, const Exercise& e, std::uint64_t seed, int stage) {
  auto fail_with = [&](const Verdict& v) {  // give_hint is false only when nothing was written
    std::printf("FAIL %d. %s: %s\n", number, e.name, v.what.c_str());
    if (!v.give_hint) return Result::nothing_written;
    print_hints(e, stage);
    return Result::fail;
  };
  // before and after run the learner's code outside gradcheck.
  auto verdict = [](const std::function<Verdict()>& check) {
    try {
      return check();
    } catch (const std::exception& err) {
      return Verdict{fmt::format("your code threw: {}", err.what()), false};
    }
  };
  if (e.before) {
    const Verdict v = verdict(e.before);
    if (!v.ok) return fail_with(v);
  }
  for (const Check& c : e.checks) {
    GradcheckOptions options;
    options.names = c.attempt->names;
    c.attempt->yours.clear();  // run_answer records this check's first backward
    options.per_node = false;
    options.seed = seed;
    GradcheckReport r;
    try {
      r = gradcheck(c.fn, c.args, options);
    } catch (const Error& err) {
      std::printf("FAIL %d. %s%s: %s\n", number, e.name, c.label.c_str(),
                  c.attempt->error.empty() ? err.what() : c.attempt->error.c_str());
      print_hints(e, stage);
      return Result::fail;
    } catch (const std::exception& err) {  // std::vector::at and the like, in an answer
      std::printf("FAIL %d. %s%s: your backward threw: %s\n", number, e.name, c.label.c_str(), err.what());
      return Result::fail;
    }
    if (!r.passed) return report_wrong(number, e, c, r, stage);
  }
  std::string note;
  if (e.after) {
    const Verdict v = verdict(e.after);
    if (!v.ok) return fail_with(v);
    note = v.what;
  }
  std::printf("pass %d. %s%s%s\n", number, e.name, note.empty() ? "" : ": ", note.c_str());
  return Result::pass;
}

// The failures so far of each exercise, one "name count" a line.
std::map<std::string, int> read_attempts(const std::string& path) {
  std::map<std::string, int> counts;
  std::ifstream in(path);
  std::string name;
  int count = 0;
  while (in >> name >> count) counts[name] = count;
  return counts;
}

// Complete or absent, by attend's own writer (core/io/file_io.hpp): a file is
// replaced atomically, a link's target is replaced and the link stays, a
// special file (a FIFO, /dev/stdout) is written through. A failure costs only
// the count.
void write_attempts(const std::string& path, const std::map<std::string, int>& counts) {
  std::string text;
  for (const auto& [name, count] : counts) text += fmt::format("{} {}\n", name, count);
  try {
    attend::write_file_atomic(path, text);
  } catch (const attend::Error& err) {
    std::fprintf(stderr, "exercises: %s; the hints will not advance\n", err.what());
  }
}

int usage(const char* argv0) {
  std::fprintf(stderr, "usage: %s [--only NAME] [--seed N] [--hint 1|2|3] [--attempts FILE]\n", argv0);
  return 2;
}

}  // namespace
}  // namespace attend::exercises::grader

int main(int argc, char** argv) {
  using namespace attend::exercises::grader;
  const char* only = nullptr;
  std::string attempts_file;
  int hint = 0;
  std::uint64_t seed = 0;
  bool seeded = false;
  for (int k = 1; k < argc; ++k) {
    const std::string flag = argv[k];
    if (k + 1 >= argc) return usage(argv[0]);
    const char* value = argv[++k];
    try {
      if (flag == "--only") only = value;
      else if (flag == "--attempts") attempts_file = value;
      else if (flag == "--seed") seed = std::stoull(value), seeded = true;
      else if (flag == "--hint") hint = std::stoi(value);
      else return usage(argv[0]);
    } catch (const std::exception&) {
      return usage(argv[0]);
    }
  }
  if (hint < 0 || hint > 3) return usage(argv[0]);
  if (!seeded) {
    std::random_device device;
    seed = (static_cast<std::uint64_t>(device()) << 32 | device()) % 1000000000;
  }
  std::printf("seed %llu: the inputs are drawn afresh at each run; --seed %llu draws these again\n",
              static_cast<unsigned long long>(seed), static_cast<unsigned long long>(seed));
  std::map<std::string, int> attempts;
  if (!attempts_file.empty()) attempts = read_attempts(attempts_file);
  const std::vector<Exercise> all = catalogue(seed);
  int passed = 0, graded = 0;
  for (std::size_t n = 0; n < all.size(); ++n) {
    if (only && std::strcmp(only, all[n].name) != 0) continue;
    ++graded;
    int& failures = attempts[all[n].name];
    const int stage = hint > 0 ? hint : std::min(failures + 1, 3);
    const Result result = grade(static_cast<int>(n + 1), all[n], seed + n, stage);
    if (result == Result::pass) ++passed;
    else if (result == Result::fail) ++failures;
  }
  if (graded == 0) {
    std::fprintf(stderr, "no exercise named %s\n", only);
    return 2;
  }
  if (!attempts_file.empty()) write_attempts(attempts_file, attempts);
  std::printf("%d of %d exercises passed\n", passed, graded);
  return passed == graded ? 0 : 1;
}
