// `attend bench` as a user runs it, on a tiny model: it times what it says it
// times, --gemm-shapes lists where the matrix products' time goes, with
// numbers that agree with the totals, and --turn-steps takes turns as
// bench/turns/bench_turns.hpp says. Speed itself is never asserted here
// (benchmarks measure speed; tests check that the report is sound).
#include <doctest/doctest.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "bench/peak/fma_peak.hpp"
#include "tests/support/cli_child.hpp"

using attend::testing::attend_cli;
using attend::testing::CliChild;
using attend::testing::contains;
using attend::testing::Scratch;
using attend::testing::start_attend_cli;
using attend::testing::wait_attend_child;

namespace {

const std::vector<std::string> kTiny = {"bench",   "--embed",      "4", "--hidden",   "6", "--batch",
                                        "2",       "--src-len",    "3", "--tgt-len",  "4", "--vocab",
                                        "12",      "--steps",      "2", "--warmup",   "1", "--decode-runs",
                                        "2",       "--threads",    "1"};

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

struct ShapeRow {
  std::string ta, tb;
  long m = 0, n = 0, k = 0;
  double calls = 0, ms = 0, share = 0, gflops = 0;
  std::string by;  // "OpenBLAS" or "packed"
};

// The rows under "GEMM shapes  WHAT: ...", up to the next line that is not a row.
std::vector<ShapeRow> shape_rows(const std::vector<std::string>& lines, const std::string& what) {
  std::vector<ShapeRow> rows;
  std::size_t i = 0;
  while (i < lines.size() && lines[i].rfind("GEMM shapes  " + what + ":", 0) != 0) ++i;
  REQUIRE_MESSAGE(i < lines.size(), "no GEMM shapes section for " << what);
  REQUIRE(i + 1 < lines.size());
  CHECK(contains(lines[i + 1], "tA tB"));
  for (i += 2; i < lines.size(); ++i) {
    std::istringstream in(lines[i]);
    ShapeRow r;
    std::string share;
    if (!(in >> r.ta >> r.tb >> r.m >> r.n >> r.k >> r.calls >> r.ms >> share >> r.gflops >> r.by)) break;
    REQUIRE(share.back() == '%');
    r.share = std::stod(share.substr(0, share.size() - 1));
    rows.push_back(r);
  }
  return rows;
}

// "in GEMM      train step 0.12 ms (34% of the time, ..), greedy ..": the share
// of WHAT's time spent in GEMM, in percent.
double in_sgemm_share(const std::string& out, const std::string& what) {
  const std::size_t line = out.find("in GEMM ");
  REQUIRE(line != std::string::npos);
  const std::size_t at = out.find(what + " ", line);
  REQUIRE(at != std::string::npos);
  const std::size_t open = out.find('(', at);
  REQUIRE(open != std::string::npos);
  return std::stod(out.substr(open + 1));
}

}  // namespace

TEST_CASE("bench --gemm-shapes lists where the products' time goes, adding up to the totals") {
  Scratch s;
  std::vector<std::string> args = kTiny;
  args.insert(args.end(), {"--gemm-shapes", "1000"});  // all of them
  const auto r = attend_cli(s, args, "", 300);
  INFO(r.err);
  INFO(r.out);
  REQUIRE(r.exit_code == 0);
  const std::vector<std::string> lines = lines_of(r.out);
  // at the bench's one thread (blas.hpp):
  const bool routed = contains(r.out, "\nfloat32 products run on attend's packed AVX-512 kernel");
  // Where AVX2 is the widest, only the small products with op(A) = A (all of this
  // tiny model's are small): none with A^T.
  const bool routed_small = contains(r.out, "attend's packed AVX2 kernel (core/kernels/packed_gemm.hpp) for the weights it packs and for products");
  CHECK(contains(r.out, "attend  threads 1 "));
  for (const std::string what : {"train step", "greedy", "greedy+score", "beam K=5"}) {
    CAPTURE(what);
    const std::vector<ShapeRow> rows = shape_rows(lines, what);
    REQUIRE(rows.size() >= 3);  // encoder gates, decoder gates, output projection at least
    double share = 0;
    bool gates = false, projection = false, packed_cell = false;
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const ShapeRow& row = rows[i];
      CHECK((row.ta == "N" || row.ta == "T"));
      CHECK((row.tb == "N" || row.tb == "T"));
      CHECK(row.m > 0);
      CHECK(row.n > 0);
      CHECK(row.k > 0);
      CHECK(row.calls > 0);
      CHECK(row.gflops >= 0);  // printed to 0.1: a tiny product on a busy machine may show 0.0
      if (i > 0) CHECK(row.ms <= rows[i - 1].ms + 1e-3);  // the most time first (3 decimals printed)
      share += row.share;
      // No product of this model is wider than the gates, 4 H = 24, or longer than
      // the beam's rows, 5 K x 2 sentences.
      CHECK(std::max({row.m, row.n, row.k}) <= 24);
      gates = gates || row.n == 24 || row.m == 24;  // x @ W^T, or dgates^T @ x for dW
      projection = projection || row.n == 12 || row.m == 12;  // onto the 12 words of the vocabulary
      // Packed weights (core/kernels/packed_gemm.hpp): decoding's output projection, the
      // decoder cell's two products (x @ W_ih^T, h @ W_hh^T) at this batch of 2,
      // and the encoder's products by W_ih and W_hh (forward and backward). Where
      // blas::gemm hands float32 products to the packed kernel (this CPU has
      // AVX-512, OpenBLAS's kernels do not, one thread), every other one too;
      // where it hands over the small ones (AVX2), every one with op(A) = A.
      CHECK((row.by == "packed" || row.by == "OpenBLAS"));
      if (routed || (routed_small && row.ta == "N")) CHECK(row.by == "packed");
      if (row.by == "packed") {
        if (routed_small) CHECK(row.ta == "N");
        else if (!routed) CHECK((row.ta == "N" && row.tb == "T"));
        packed_cell = packed_cell || row.n == 24;
      }
      if (what != "train step" && row.n == 12) CHECK(row.by == "packed");
    }
    CHECK(gates);
    CHECK(projection);
    CHECK(packed_cell);
    // The shapes split the total: their shares add up to the "in GEMM" share
    // (each printed to 0.1%, the total to 1%).
    const double total = in_sgemm_share(r.out, what);
    CAPTURE(share);
    CAPTURE(total);
    CHECK(std::abs(share - total) <= 0.6 + 0.05 * static_cast<double>(rows.size()));
  }
}

TEST_CASE("bench --openblas runs blas::gemm's products on OpenBLAS, the packed call sites stay packed") {
  Scratch s;
  std::vector<std::string> args = kTiny;
  args.insert(args.end(), {"--no-decode", "--gemm-shapes", "1000", "--openblas"});
  const auto r = attend_cli(s, args, "", 300);
  INFO(r.err);
  INFO(r.out);
  REQUIRE(r.exit_code == 0);
  CHECK(contains(r.out, "\nfloat32 products run on OpenBLAS (set so)"));
  const std::vector<ShapeRow> rows = shape_rows(lines_of(r.out), "train step");
  bool openblas = false, packed = false;
  for (const ShapeRow& row : rows) {
    if (row.by == "packed") CHECK((row.ta == "N" && row.tb == "T"));  // gemm_packed: x @ W^T
    openblas = openblas || row.by == "OpenBLAS";
    packed = packed || row.by == "packed";
  }
  CHECK(openblas);  // the output projection, attention, the weight gradients of the cell
  CHECK(packed);    // the encoder's lstm_sequence
}

TEST_CASE("bench --gemm-shapes N stops at N, without it there is no table, --no-decode times training only") {
  Scratch s;
  std::vector<std::string> args = kTiny;
  args.insert(args.end(), {"--no-decode", "--gemm-shapes", "2"});
  auto r = attend_cli(s, args, "", 300);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(shape_rows(lines_of(r.out), "train step").size() == 2);
  CHECK(contains(r.out, "GEMM shapes  train step: the 2 that take the most time (per step)"));
  CHECK_FALSE(contains(r.out, "greedy"));
  // The ceiling and the yardstick of this run, and the step's share of each.
  CHECK(contains(r.out, "\npeak         float32 FMA "));
  CHECK(contains(r.out, " on 1 thread of " + attend::tools::cpu_model_name() + ": "));
  CHECK(contains(r.out, "% of peak), measured in this run\n"));
  CHECK(contains(r.out, "\npeak share   train step "));
  CHECK(contains(r.out, "% of peak, "));

  args = kTiny;
  r = attend_cli(s, args, "", 300);
  REQUIRE(r.exit_code == 0);
  CHECK_FALSE(contains(r.out, "GEMM shapes"));
  CHECK(contains(r.out, "beam K=5"));
  CHECK(contains(r.out, "peak RSS"));
  CHECK(contains(r.out, "\nOpenBLAS kernels "));  // which kernels the figures come from

  args = kTiny;
  args.insert(args.end(), {"--no-train"});
  r = attend_cli(s, args, "", 300);
  REQUIRE(r.exit_code == 0);
  CHECK(contains(r.out, "\npeak         float32 FMA "));
  CHECK_FALSE(contains(r.out, "peak share"));  // no training step to compare
}

TEST_CASE("the FMA probe reports a rate at a width this CPU runs, over the threads asked for") {
  for (const int threads : {1, 2}) {
    CAPTURE(threads);
    const attend::tools::FmaPeak p = attend::tools::measure_fma_peak(threads);
    CHECK(std::isfinite(p.gflops));
    CHECK(p.gflops > 0);
    CHECK(p.threads == threads);
    CHECK(p.chains >= 8);  // enough in flight to hide the FMA latency
    if (p.isa == "AVX-512") {
      CHECK(__builtin_cpu_supports("avx512f"));
      CHECK(p.lanes == 16);
    } else if (p.isa == "AVX2") {
      CHECK(__builtin_cpu_supports("avx2"));
      CHECK(p.lanes == 8);
    } else {
      CHECK(p.isa == "128-bit");
      CHECK(p.lanes == 4);
    }
  }
  CHECK(attend::tools::measure_fma_peak(0).threads == 1);
  CHECK_FALSE(attend::tools::cpu_model_name().empty());
}

TEST_CASE("bench --gemm-shapes refuses what is not a count, with a message and no crash") {
  Scratch s;
  for (const std::string bad : {"-1", "1001", "abc", "1e300", ""}) {
    CAPTURE(bad);
    std::vector<std::string> args = kTiny;
    args.insert(args.end(), {"--gemm-shapes", bad});
    const auto r = attend_cli(s, args, "", 60);
    CHECK(r.signal == 0);
    CHECK(r.exit_code != 0);
    CHECK(contains(r.err, "attend: error: "));
    CHECK(contains(r.err, "--gemm-shapes"));
  }
}

// --turn-steps and --turn-fifos (bench/turns/bench_turns.hpp): this test plays the
// arbiter that bench/compare_seq2seq.sh plays with TURNS=N. It gives `gives`
// turns and then closes its end; it records every byte the bench writes.
struct Arbiter {
  std::string in, out;  // the bench's IN and OUT
  std::string heard;    // every byte the bench wrote, in order
  int gives = 1000;     // turns to give before closing IN
  std::string trouble;  // what went wrong on the arbiter's side, for a check after the bench ends

  // Runs on a thread started after the bench's child is forked (see
  // tests/support/cli_child.hpp), so it reports trouble rather than REQUIRE.
  void run() {
    // OUT's read end does not wait for the bench, which may fail before it
    // opens its ends. IN's write end opens once the bench is ready.
    const int from_bench = ::open(out.c_str(), O_RDONLY | O_NONBLOCK);
    if (from_bench < 0) {
      trouble = "could not open OUT";
      return;
    }
    int to_bench = -1, given = 0;
    for (;;) {
      pollfd p{from_bench, POLLIN, 0};
      if (::poll(&p, 1, 60000) <= 0) {  // a minute of silence: give up
        trouble = "a minute without a byte from the bench";
        break;
      }
      char c = 0;
      const ssize_t n = ::read(from_bench, &c, 1);
      if (n == 0) break;  // the bench closed OUT
      if (n < 0) continue;
      heard += c;
      if (c == 'e') break;
      if (c == 'r') to_bench = ::open(in.c_str(), O_WRONLY);
      if (to_bench < 0) {
        trouble = "could not open IN";
        break;
      }
      if (given == gives) {
        ::close(to_bench);  // no more turns: the bench runs on alone
        to_bench = -1;
        break;
      }
      if (::write(to_bench, "g", 1) == 1) ++given;
    }
    if (to_bench >= 0) ::close(to_bench);
    ::close(from_bench);
  }
};

std::vector<std::string> with_turns(const Scratch& s, const std::string& steps, const std::string& turn_steps) {
  std::vector<std::string> args = kTiny;
  *(std::find(args.begin(), args.end(), "--steps") + 1) = steps;
  args.insert(args.end(), {"--no-decode", "--turn-steps", turn_steps, "--turn-fifos", s.path("in") + "," + s.path("out")});
  return args;
}

TEST_CASE("bench --turn-steps: ready, then a go before each turn, 't' after it and 'e' after the last step") {
  Scratch s;
  REQUIRE(::mkfifo(s.path("in").c_str(), 0600) == 0);
  REQUIRE(::mkfifo(s.path("out").c_str(), 0600) == 0);
  for (const auto& [steps, turn_steps, heard, turns] :
       {std::tuple<std::string, std::string, std::string, int>{"6", "2", "rtte", 3}, {"5", "2", "rtte", 3},
        {"4", "4", "re", 1}, {"3", "7", "re", 1}}) {
    CAPTURE(steps);
    CAPTURE(turn_steps);
    Arbiter a{s.path("in"), s.path("out"), "", 1000, ""};
    const CliChild bench = start_attend_cli(s, with_turns(s, steps, turn_steps), "", 120);
    std::thread arbiter([&] { a.run(); });
    const auto r = wait_attend_child(bench);
    arbiter.join();
    INFO(r.err);
    CHECK(a.trouble == "");
    CHECK(r.signal == 0);
    REQUIRE(r.exit_code == 0);
    CHECK(a.heard == heard);
    CHECK(contains(r.out, fmt::format("the training steps ran in {} turn{} of {} steps", turns,
                                      turns == 1 ? "" : "s", turn_steps)));
    // Each turn after the first runs one untimed step first.
    CHECK(contains(r.out, fmt::format("over the {} steps after the warm-up", std::stoi(steps) + turns - 1)));
  }
}

TEST_CASE("bench --turn-steps: when the arbiter closes its end the bench runs on alone to the end") {
  Scratch s;
  REQUIRE(::mkfifo(s.path("in").c_str(), 0600) == 0);
  REQUIRE(::mkfifo(s.path("out").c_str(), 0600) == 0);
  Arbiter a{s.path("in"), s.path("out"), "", 1000, ""};
  a.gives = 1;
  const CliChild bench = start_attend_cli(s, with_turns(s, "6", "2"), "", 120);
  std::thread arbiter([&] { a.run(); });
  const auto r = wait_attend_child(bench);
  arbiter.join();
  INFO(r.err);
  CHECK(a.trouble == "");
  CHECK(r.signal == 0);
  REQUIRE(r.exit_code == 0);
  CHECK(a.heard == "rt");
  CHECK(contains(r.out, "the training steps ran in 1 turn of 2 steps"));
  CHECK(contains(r.out, "train step   median"));
}

TEST_CASE("bench --turn-steps and --turn-fifos refuse what they cannot use, with a message and no crash") {
  Scratch s;
  const std::string file = s.write("plain", "not a FIFO");
  REQUIRE(::mkfifo(s.path("fifo").c_str(), 0600) == 0);
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--turn-steps", "2"}, "--turn-steps and --turn-fifos go together"},
      {{"--turn-fifos", s.path("fifo") + "," + s.path("fifo")}, "--turn-steps and --turn-fifos go together"},
      {{"--turn-steps", "2", "--turn-fifos", file + "," + s.path("fifo")}, "is not a FIFO (make one with mkfifo)"},
      {{"--turn-steps", "2", "--turn-fifos", s.path("fifo") + "," + s.path("missing")}, "missing"},
      {{"--turn-steps", "2", "--turn-fifos", s.path("fifo")}, "--turn-fifos"},
      {{"--turn-steps", "0", "--turn-fifos", s.path("fifo") + "," + s.path("fifo")}, "--turn-steps"},
      {{"--turn-steps", "2", "--turn-fifos", s.path("fifo") + "," + s.path("fifo"), "--no-train"}, "--no-train"},
  };
  for (const auto& [extra, message] : cases) {
    std::vector<std::string> args = kTiny;
    args.insert(args.end(), extra.begin(), extra.end());
    CAPTURE(fmt::format("{}", fmt::join(extra, " ")));
    const auto r = attend_cli(s, args, "", 60);
    CHECK(r.signal == 0);
    CHECK(r.exit_code != 0);
    CHECK(contains(r.err, "attend: error: "));
    CHECK(contains(r.err, message));
  }
}
