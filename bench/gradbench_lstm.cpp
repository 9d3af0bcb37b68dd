// bench_gradbench_lstm: what the tape costs on an unbatched recurrence.
// GradBench's `lstm` eval (bench/gradbench/lstm_eval.hpp) records ~50 ops of
// b = 7 numbers per character, thousands of characters long, so the time is
// the bookkeeping of each op (its output, its node, its backward), not the
// arithmetic. It times the objective plus its gradient through attend's
// autograd, written in the eval's time-major loop, against the same written
// out by hand, in alternating rounds, and checks that the two agree.
// Goal (docs/performance.md): the tape within 3x of the hand-written
// derivative; bench/gradbench_lstm.sh adds the PyTorch twin (goal <= 0.1x).
//
//   bench_gradbench_lstm [--layers L] [--chars C] [--rounds R] [--text FILE] [--write-inputs FILE]
//
// The text defaults to /usr/share/common-licenses/GPL-3 (Debian's base-files);
// GradBench's own inputs take their characters from another English text, and
// their parameters from another generator, in the same way.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/os.h>

#include "bench/gradbench/lstm_by_hand.hpp"
#include "bench/gradbench/lstm_eval.hpp"
#include "bench/timing.hpp"

using namespace attend;
using namespace attend::bench::gradbench;

namespace {

struct Args {
  int layers = 2, chars = 1024, rounds = 11;
  std::string text = "/usr/share/common-licenses/GPL-3", write_inputs;
};

int usage() {
  std::fprintf(stderr,
               "usage: bench_gradbench_lstm [--layers 1..8] [--chars 2..100000] [--rounds 1..1000] [--text FILE] "
               "[--write-inputs FILE]\n");
  return 2;
}

bool parse(int argc, char** argv, Args& a) {
  for (int k = 1; k < argc; k += 2) {
    if (k + 1 >= argc) return false;
    const std::string flag = argv[k];
    const char* value = argv[k + 1];
    std::optional<int> n;
    if (flag == "--layers" && (n = bench::parse_count(value, 1, 8))) a.layers = *n;
    else if (flag == "--chars" && (n = bench::parse_count(value, 2, 100000))) a.chars = *n;
    else if (flag == "--rounds" && (n = bench::parse_count(value, 1, 1000))) a.rounds = *n;
    else if (flag == "--text") a.text = value;
    else if (flag == "--write-inputs") a.write_inputs = value;
    else return false;
  }
  return true;
}

// The inputs in GradBench's protocol shape (rows of numbers), for the PyTorch twin.
void write_inputs(const LstmInputs& in, const std::string& path) {
  const auto rows = [&](const std::vector<double>& v, std::size_t cols) {
    std::string s = "[";
    for (std::size_t r = 0; r * cols < v.size(); ++r)
      s += fmt::format("{}[{:.17g}]", r ? "," : "", fmt::join(v.begin() + r * cols, v.begin() + (r + 1) * cols, ","));
    return s + "]";
  };
  const auto b = static_cast<std::size_t>(in.bits);
  std::ofstream out(path);
  out << fmt::format(R"({{"main_params":{},"extra_params":{},"state":{},"sequence":{}}})", rows(in.main, 4 * b),
                     rows(in.extra, b), rows(in.state, b), rows(in.sequence, b))
      << '\n';
  if (!out.flush()) throw Error(fmt::format("bench_gradbench_lstm: cannot write {}", path));
}

double largest_difference(const LstmResult& a, const LstmResult& b) {
  double worst = 0;
  const auto compare = [&](const std::vector<double>& x, const std::vector<double>& y) {
    for (std::size_t i = 0; i < x.size(); ++i)
      worst = std::max(worst, std::abs(x[i] - y[i]) / std::max(1e-300, std::max(std::abs(x[i]), std::abs(y[i]))));
  };
  compare(a.d_main, b.d_main);
  compare(a.d_extra, b.d_extra);
  return worst;
}

double milliseconds(LstmResult (*fn)(const LstmInputs&), const LstmInputs& in) {
  const double t0 = bench::now_ns();
  const LstmResult r = fn(in);
  const double t1 = bench::now_ns();
  if (!std::isfinite(r.loss)) throw Error("bench_gradbench_lstm: a non-finite loss");
  return (t1 - t0) / 1e6;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  if (!parse(argc, argv, a)) return usage();
  try {
    std::ifstream file(a.text);
    std::stringstream text;
    text << file.rdbuf();
    if (!file) throw Error(fmt::format("bench_gradbench_lstm: cannot read {}", a.text));
    const LstmInputs in = make_lstm_inputs(text.str(), a.layers, a.chars, 1);
    if (!a.write_inputs.empty()) write_inputs(in, a.write_inputs);
    const LstmResult tape = lstm_by_tape(in), hand = lstm_by_hand(in);
    const double difference = largest_difference(tape, hand);
    fmt::print("gradbench lstm: l={} c={} b={} (the first {} characters of {}), float64, one thread\n", a.layers,
               a.chars, in.bits, a.chars, a.text);
    fmt::print("loss         tape {:.15g}   by hand {:.15g}   largest relative gradient difference {:.1e}\n",
               tape.loss, hand.loss, difference);
    if (difference > 1e-9 || std::abs(tape.loss - hand.loss) > 1e-12 * std::abs(hand.loss)) {
      std::fprintf(stderr, "bench_gradbench_lstm: the tape and the hand-written derivative disagree\n");
      return 1;
    }
    std::vector<double> t_tape, t_hand, ratios;
    for (int r = 0; r < a.rounds; ++r) {  // alternating, the order swapped each round
      const bool tape_first = r % 2 == 0;
      const double x = tape_first ? milliseconds(lstm_by_tape, in) : 0;
      const double y = milliseconds(lstm_by_hand, in);
      const double z = tape_first ? x : milliseconds(lstm_by_tape, in);
      t_tape.push_back(z);
      t_hand.push_back(y);
      ratios.push_back(z / y);
    }
    const auto range = [](const std::vector<double>& v) {
      return fmt::format("{:.2f}-{:.2f}", *std::min_element(v.begin(), v.end()), *std::max_element(v.begin(), v.end()));
    };
    fmt::print("objective + gradient, median of {} alternating rounds (range):\n", a.rounds);
    fmt::print("  tape       {:8.2f} ms ({})\n", bench::median(t_tape), range(t_tape));
    fmt::print("  by hand    {:8.2f} ms ({})\n", bench::median(t_hand), range(t_hand));
    fmt::print("  ops a step ~{}; tape per op (forward + backward) ~{:.0f} ns\n", 17 * a.layers + 11,
               bench::median(t_tape) * 1e6 / ((17.0 * a.layers + 11) * (a.chars - 1)));
    const double ratio = bench::median(ratios);
    fmt::print("tape / by hand: {:.2f}x ({}) within the rounds; goal <= 3x: {}\n", ratio, range(ratios),
               ratio <= 3 ? "met" : "NOT met");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  return 0;
}
