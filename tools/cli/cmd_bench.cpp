// attend bench: the speed of one training step (forward, backward, clipping,
// Adam), of greedy decoding and of beam search, on random data, after warm-up;
// the core's FMA peak and the sgemm rate of the same machine in the same run,
// how close each time comes to them, and the floor sgemm puts under each
// time; the minor page faults
// per steady-state training step and the peak resident memory. Its PyTorch
// twins are bench/torch_seq2seq.py (training, greedy decoding) and
// bench/torch_decode.py (greedy decoding and beam search), with the same flags
// and the same model.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <optional>

#include <fmt/format.h>

#include "core/kernels/blas.hpp"
#include "models/quantize/quantize.hpp"
#include "core/io/limits.hpp"
#include "core/storage.hpp"
#include "bench/peak/fma_peak.hpp"
#include "bench/turns/bench_turns.hpp"
#include "tools/cli/cli.hpp"
#include "models/decode/decoding.hpp"
#include "models/train/trainer.hpp"
#include "tools/cli/checks.hpp"
#include "tools/cli/commands.hpp"

namespace attend::tools {

namespace {

struct BenchFlags {
  std::string attention = "additive";
  std::int64_t embed = 32, hidden = 64, layers = 1, batch = 16, src_len = 20, tgt_len = 20, vocab = 1000;
  bool bidirectional = false;
  int steps = 20, warmup = 3, threads = 1;
  std::int64_t decode_steps = 0;  // 0: tgt_len
  std::int64_t beam = 5;
  int decode_runs = 0;            // 0: max(3, steps / 4)
  int gemm_shapes = 0;            // print the N GEMM shapes that take the most time
  bool train = true, decode = true;
  bool int8 = false;      // decode with the model quantized (models/quantize/quantize.hpp)
  bool openblas = false;  // every product blas::gemm runs on OpenBLAS (the packed kernel's own call sites stay)
  std::uint64_t seed = 1;
  int turn_steps = 0;                  // > 0: take turns of this many training steps (bench/turns/bench_turns.hpp)
  std::vector<std::string> turn_fifos;  // IN, OUT
};

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

struct Summary {
  double median, lo, hi;
};

Summary summarise(std::vector<double> v) {
  if (v.empty()) fail("bench: no timed runs to take the median of");
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return {n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]), v.front(), v.back()};
}

// The multiply-adds of the model's matrix products, counted as
// bench/torch_seq2seq.py counts them: the encoder side of a batch (the
// encoder LSTM over B sentences of S tokens, and the attention keys), and one
// decoder step of one row (LSTM cell, attention, W_c, output projection).
struct Macs {
  double source;   // per batch
  double row_step;  // per decoder row and step
};

Macs model_macs(const BenchFlags& f) {
  const double B = f.batch, S = f.src_len, E = f.embed, H = f.hidden, V = f.vocab;
  const double D = f.bidirectional ? 2 : 1, Hk = D * H;
  double source = 0, in = E;
  for (int l = 0; l < f.layers; ++l) {
    source += D * B * S * 4 * H * (in + H);
    in = Hk;
  }
  double row = 4 * H * (E + H + H);
  if (f.attention != "none") {
    source += B * S * Hk * H;
    row += H * H + 2 * S * Hk + (f.attention == "additive" ? S * H : 0);
    row += (H + Hk) * H;
  } else {
    row += H * H;
  }
  row += H * V;
  return {source, row};
}

// FLOPs (2 per multiply-add) of one training step: forward and backward, 3x the forward.
double flops_per_step(const BenchFlags& f) {
  const Macs m = model_macs(f);
  return 3 * 2 * (m.source + static_cast<double>(f.batch * f.tgt_len) * m.row_step);
}

// FLOPs of decoding the batch for `steps` tokens with `rows_per_sentence` rows
// (1 greedy, K beam: every row is run at every step, live or not, in both twins).
double flops_per_decode(const BenchFlags& f, std::int64_t steps, std::int64_t rows_per_sentence) {
  const Macs m = model_macs(f);
  return 2 * (m.source + static_cast<double>(f.batch * rows_per_sentence * steps) * m.row_step);
}

// OpenBLAS's float32 GEMM rate on this machine now, at the bench's thread
// count: 512 x 512 x 512, the median of 20 runs after 3 (what bench_matmul
// measures). The training step's GFLOP/s is compared with it. OpenBLAS's
// alone, even where attend's packed kernel would run this product.
double sgemm_gflops() {
  const bool routing = blas::set_packed_routing(false);
  const struct Restore {
    bool on;
    ~Restore() { blas::set_packed_routing(on); }
  } restore{routing};
  constexpr std::int64_t n = 512;
  std::vector<float> a(n * n, 0.5f), b(n * n, 0.25f), c(n * n);
  std::vector<double> times;
  for (int i = 0; i < 23; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    blas::gemm(false, false, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n);
    if (i >= 3) times.push_back(seconds_since(t0));
  }
  return 2.0 * n * n * n / summarise(times).median / 1e9;
}

// Random sentences of exactly src_len and tgt_len tokens (ids 4.. are words).
Batch random_batch(const BenchFlags& f, Generator& gen) {
  std::vector<EncodedPair> data(static_cast<std::size_t>(f.batch));
  for (EncodedPair& p : data) {
    for (std::int64_t i = 0; i < f.src_len; ++i) p.source.push_back(4 + gen.randint(f.vocab - 4));
    for (std::int64_t i = 0; i + 1 < f.tgt_len; ++i) p.target.push_back(4 + gen.randint(f.vocab - 4));  // + </s>
  }
  std::vector<std::int64_t> ids(data.size());
  for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<std::int64_t>(i);
  return make_batch(data, ids);
}

void print_times(const char* what, const Summary& s, double tokens, const std::string& extra) {
  fmt::print("{:<13}median {:9.2f} ms ({:.2f}-{:.2f})   {:10.0f} tokens/s{}\n", what, s.median * 1e3, s.lo * 1e3,
             s.hi * 1e3, tokens / s.median, extra);
}

// One kind of timed work: its median time, its FLOPs and its time inside
// GEMM (blas::gemm_stats), per run or step.
struct Timed {
  std::string what;  // "train step", "greedy", "beam K=5"
  double median = 0, flops = 0, gemm_seconds = 0, gemm_calls = 0;
  std::vector<blas::GemmShapeStats> shapes{};  // totals over `runs`, the most time first
  int runs = 1;
};

// Averages per run of the GEMM counts since the last set_gemm_timing(true).
void take_gemm_stats(Timed& t, int runs) {
  const blas::GemmStats g = blas::gemm_stats();
  blas::set_gemm_timing(false);
  t.gemm_seconds = g.seconds / runs;
  t.gemm_calls = static_cast<double>(g.calls) / runs;
  t.shapes = blas::gemm_shape_stats();
  t.runs = runs;
}

// The GEMM shapes that take the most time, per run: where the products' time goes.
void print_gemm_shapes(const Timed& t, int count) {
  fmt::print("GEMM shapes  {}: the {} that take the most time (per {})\n", t.what,
             std::min<std::size_t>(static_cast<std::size_t>(count), t.shapes.size()),
             t.what == "train step" ? "step" : "run");
  fmt::print("             {:>2} {:>2} {:>6} {:>6} {:>6}  {:>7}  {:>8}  {:>6}  {:>9}  {}\n", "tA", "tB", "m", "n", "k",
             "calls", "ms", "share", "GFLOP/s", "by");
  for (std::size_t i = 0; i < t.shapes.size() && i < static_cast<std::size_t>(count); ++i) {
    const blas::GemmShapeStats& g = t.shapes[i];
    const double flops = 2.0 * static_cast<double>(g.m) * static_cast<double>(g.n) * static_cast<double>(g.k) *
                         static_cast<double>(g.calls);
    fmt::print("             {:>2} {:>2} {:>6} {:>6} {:>6}  {:>7.1f}  {:>8.3f}  {:>5.1f}%  {:>9.1f}  {}\n",
               g.trans_a ? "T" : "N", g.trans_b ? "T" : "N", g.m, g.n, g.k, static_cast<double>(g.calls) / t.runs,
               g.seconds / t.runs * 1e3, 100 * g.seconds / t.runs / t.median,
               flops / 1e9 / std::max(g.seconds, 1e-12), g.packed ? "packed" : "OpenBLAS");
  }
}

Timed bench_training(const BenchFlags& f, Seq2Seq& model, const Batch& batch) {
  auto optimizer = make_optimizer(OptimizerKind::Adam, model.parameters(), 1e-3);
  const std::vector<Tensor> params = model.parameters();
  std::vector<double> times;
  long faults_before = 0;
  int counted = 0;  // steps run since the warm-up
  std::optional<Turns> turns;
  if (f.turn_steps > 0) turns.emplace(f.turn_fifos[0], f.turn_fifos[1], f.turn_steps, f.warmup);
  const auto step = [&] {
    optimizer->zero_grad();
    Tensor loss = model.loss(batch);
    loss.backward();
    optim::clip_grad_norm(params, 5.0);
    optimizer->step();
  };
  for (int i = 0; i < f.warmup + f.steps; ++i) {
    // With turns, an untimed step after the other process's turn (counted with
    // the timed ones in the page faults and GEMM figures per step).
    if (turns && turns->before_step(i)) {
      step();
      ++counted;
    }
    if (i == f.warmup) {
      faults_before = memory::minor_page_faults();
      blas::set_gemm_timing(true);
    }
    const auto t0 = std::chrono::steady_clock::now();
    step();
    if (i >= f.warmup) {
      times.push_back(seconds_since(t0));
      ++counted;
    }
    if (turns) turns->after_step(i, i + 1 == f.warmup + f.steps);
  }
  const double faults = static_cast<double>(memory::minor_page_faults() - faults_before) / counted;
  Timed t{"train step"};
  take_gemm_stats(t, counted);
  const Summary s = summarise(times);
  const double gflop = flops_per_step(f) / 1e9;
  fmt::print("train step   median {:9.2f} ms ({:.2f}-{:.2f})   {:10.0f} target tokens/s   {:.2f} GFLOP/step   "
             "{:.1f} GFLOP/s\n",
             s.median * 1e3, s.lo * 1e3, s.hi * 1e3, static_cast<double>(f.batch * f.tgt_len) / s.median, gflop,
             gflop / s.median);
  fmt::print("page faults  {:.1f} minor faults per training step (over the {} steps after the warm-up)\n", faults, counted);
  if (turns)
    fmt::print("turns        the training steps ran in {} turn{} of {} steps, taking turns through {} and {}\n",
               turns->turns_taken(), turns->turns_taken() == 1 ? "" : "s", f.turn_steps, f.turn_fifos[0],
               f.turn_fifos[1]);
  t.median = s.median;
  t.flops = flops_per_step(f);
  return t;
}

// Greedy decoding and beam search over exactly decode_steps output tokens per
// sentence: no stop at </s>, so that every run does the same work and the twin
// (bench/torch_decode.py) does it too. "greedy" keeps no scores, as its twin
// takes the argmax alone (DecodeOptions::scores; what `attend translate` runs
// without --n-best); "greedy+score" is the same with every token's log p.
std::vector<Timed> bench_decoding(const BenchFlags& f, Seq2Seq& model, const Batch& batch) {
  model.eval();
  const std::int64_t steps = f.decode_steps > 0 ? f.decode_steps : f.tgt_len;
  const int runs = f.decode_runs > 0 ? f.decode_runs : std::max(3, f.steps / 4);
  DecodeOptions o;
  o.max_len_a = 0;
  o.max_len_b = steps;
  o.stop_at_eos = false;
  const double tokens = static_cast<double>(f.batch * steps);
  struct Kind {
    std::int64_t beam;
    bool scores;
    std::string what;
  };
  std::vector<Kind> kinds = {{1, false, "greedy"}, {1, true, "greedy+score"}};
  if (f.beam > 1) kinds.push_back({f.beam, true, fmt::format("beam K={}", f.beam)});
  std::vector<Timed> out;
  for (const Kind& kind : kinds) {
    o.beam = kind.beam;
    o.scores = kind.scores;
    std::vector<double> times;
    for (int i = 0; i < 1 + runs; ++i) {
      if (i == 1) blas::set_gemm_timing(true);
      const auto t0 = std::chrono::steady_clock::now();
      const std::vector<Hypothesis> out = translate(model, batch, o);
      if (i >= 1) times.push_back(seconds_since(t0));
      for (const Hypothesis& h : out)
        if (static_cast<std::int64_t>(h.tokens.size()) != steps)
          fail("bench: a hypothesis has {} tokens, not the {} asked for", h.tokens.size(), steps);
    }
    const std::string extra = fmt::format("   ({} sentences x {} tokens)", f.batch, steps);
    const Summary s = summarise(times);
    print_times(kind.what.c_str(), s, tokens, extra);
    Timed t{kind.what, s.median, flops_per_decode(f, steps, kind.beam)};
    take_gemm_stats(t, runs);
    out.push_back(t);
  }
  return out;
}

// How close each timing is to the machine. "in GEMM": the time its matrix
// products did take (blas::gemm_stats: OpenBLAS's and the packed ones), the rest
// being everything else. "floor": the time they would take at OpenBLAS's sgemm
// rate. Nothing doing these products through this OpenBLAS (PyTorch's twins do
// the same ones through it) can beat the floor, so such a twin's time / floor
// bounds the speed-up; the compare scripts print it beside the measured ratio.
// attend's packed product (decoding's output projection) can run faster than
// OpenBLAS's kernels, and then beats the floor.
void print_gemm_lines(double sgemm, double peak, const std::vector<Timed>& timed) {
  std::string in_gemm, floor;
  for (const Timed& t : timed) {
    const char* sep = in_gemm.empty() ? "" : ", ";
    const double gemm_gflops = t.flops / 1e9 / std::max(t.gemm_seconds, 1e-12);
    in_gemm += fmt::format("{}{} {:.2f} ms ({:.0f}% of the time, {:.0f} calls at {:.1f} GFLOP/s, {:.0f}% of peak)", sep,
                           t.what, t.gemm_seconds * 1e3, 100 * t.gemm_seconds / t.median, t.gemm_calls, gemm_gflops,
                           100 * gemm_gflops / peak);
    const double least = t.flops / (sgemm * 1e9);
    floor += fmt::format("{}{} {:.2f} ms ({:.0f}% of the time)", sep, t.what, least * 1e3, 100 * least / t.median);
  }
  fmt::print("in GEMM      {}\n", in_gemm);
  fmt::print("floor        the matrix products alone at the OpenBLAS sgemm rate: {}\n", floor);
}

// The ceiling and the yardstick, measured in this run, with how close the
// training step (train_gflops; 0: not run) comes to each.
void print_peak_lines(const FmaPeak& peak, double sgemm, double train_gflops) {
  fmt::print("peak         float32 FMA {:.1f} GFLOP/s on {} thread{} of {}: {}, {} chains of {} lanes, measured in this run\n",
             peak.gflops, peak.threads, peak.threads == 1 ? "" : "s", cpu_model_name(), peak.isa, peak.chains,
             peak.lanes);
  fmt::print("sgemm        512x512x512 {:.1f} GFLOP/s ({:.0f}% of peak), measured in this run\n", sgemm,
             100 * sgemm / peak.gflops);
  if (train_gflops > 0)
    fmt::print("peak share   train step {:.1f} GFLOP/s: {:.0f}% of peak, {:.0f}% of sgemm\n", train_gflops,
               100 * train_gflops / peak.gflops, 100 * train_gflops / sgemm);
}

void run_bench(const BenchFlags& f) {
  if ((f.turn_steps > 0) != !f.turn_fifos.empty()) fail("bench: --turn-steps and --turn-fifos go together");
  if (f.turn_steps > 0 && !f.train) fail("bench: --turn-steps takes turns of training steps, and --no-train skips them");
  if (f.int8 && f.train) fail("bench: --int8 times the decoding of an int8 model, which is not trained: add --no-train");
  blas::set_num_threads(f.threads);
  if (f.openblas) blas::set_packed_routing(false);
  Seq2SeqConfig c;
  c.source_vocab = c.target_vocab = f.vocab;
  c.embed = f.embed;
  c.hidden = f.hidden;
  c.layers = f.layers;
  c.bidirectional = f.bidirectional;
  c.attention = parse_attention(f.attention);
  c.validate();  // the model's size against core/io/limits.hpp, before anything is allocated
  Generator gen(f.seed);
  Seq2Seq model(c, gen);
  const Batch batch = random_batch(f, gen);
  if (f.int8) quantize(model);
  fmt::print("attend  threads {}  attention {}{}\n", f.threads, f.attention, f.int8 ? "  int8" : "");
  fmt::print("{}\n", blas_kernels_line());
  const double sgemm_before = sgemm_gflops();
  std::vector<Timed> timed;
  if (f.train) timed.push_back(bench_training(f, model, batch));
  if (f.decode)
    for (const Timed& t : bench_decoding(f, model, batch)) timed.push_back(t);
  // sgemm before and after: the better of the two, should the machine be busy for one of them.
  const double sgemm = std::max(sgemm_before, sgemm_gflops());
  const FmaPeak peak = measure_fma_peak(f.threads);
  print_peak_lines(peak, sgemm, f.train ? timed[0].flops / 1e9 / timed[0].median : 0.0);
  print_gemm_lines(sgemm, peak.gflops, timed);
  if (f.gemm_shapes > 0)
    for (const Timed& t : timed) print_gemm_shapes(t, f.gemm_shapes);
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  fmt::print("peak RSS     {:.0f} MB\n", static_cast<double>(usage.ru_maxrss) / 1024);
}

}  // namespace

void add_bench_command(CLI::App& app) {
  auto f = std::make_shared<BenchFlags>();
  auto* cmd = app.add_subcommand("bench",
                                 "Time training steps, greedy decoding and beam search on random data "
                                 "(twins: bench/torch_seq2seq.py, bench/torch_decode.py)");
  cmd->add_option("--attention", f->attention, "none, additive, dot or general")
      ->check(CLI::IsMember({"none", "additive", "dot", "general"}))
      ->capture_default_str();
  cmd->add_option("--embed", f->embed, "Embedding size")->check(check::integer(1, limits::kMaxDimension, true))->capture_default_str();
  cmd->add_option("--hidden", f->hidden, "Hidden size")->check(check::integer(1, limits::kMaxDimension, true))->capture_default_str();
  cmd->add_option("--layers", f->layers, "Encoder layers")->check(check::integer(1, limits::kMaxLayers, true))->capture_default_str();
  cmd->add_flag("--bidirectional", f->bidirectional, "Bidirectional encoder");
  cmd->add_option("--batch", f->batch, "Sentences per batch")->check(check::integer(1, limits::kMaxBatch, true))->capture_default_str();
  cmd->add_option("--src-len", f->src_len, "Source length")->check(check::integer(1, limits::kMaxSequence, true))->capture_default_str();
  cmd->add_option("--tgt-len", f->tgt_len, "Target length")->check(check::integer(2, limits::kMaxSequence, true))->capture_default_str();
  cmd->add_option("--vocab", f->vocab, "Vocabulary size (both sides)")->check(check::integer(5, limits::kMaxVocabulary, true))->capture_default_str();
  cmd->add_option("--steps", f->steps, "Timed training steps")->check(check::integer(1, 1000000))->capture_default_str();
  cmd->add_option("--warmup", f->warmup, "Untimed steps first")->check(check::integer(0, 1000000))->capture_default_str();
  cmd->add_option("--decode-steps", f->decode_steps, "Output tokens per sentence when decoding, no stop at </s> (0: --tgt-len)")
      ->check(check::integer(0, limits::kMaxSequence, true))
      ->capture_default_str();
  cmd->add_option("--beam", f->beam, "Beam size of the timed beam search (1: greedy only)")
      ->check(check::integer(1, limits::kMaxBeam, true))
      ->capture_default_str();
  cmd->add_option("--decode-runs", f->decode_runs, "Timed decoding runs of each kind (0: max(3, steps / 4))")
      ->check(check::integer(0, 1000000))
      ->capture_default_str();
  cmd->add_option("--gemm-shapes", f->gemm_shapes, "Also print the N GEMM shapes that take the most time")
      ->check(check::integer(0, 1000))
      ->capture_default_str();
  cmd->add_flag("!--no-train", f->train, "Skip the training steps (time decoding only)");
  cmd->add_flag("!--no-decode", f->decode, "Skip decoding (time training only)");
  cmd->add_flag("--int8", f->int8,
                "Decode with the model quantized to int8 (as attend quantize makes it); needs --no-train");
  cmd->add_option("--threads", f->threads, "OpenBLAS threads")->check(check::threads())->capture_default_str();
  cmd->add_flag("--openblas", f->openblas,
                "Run the float32 products blas::gemm would hand to attend's packed kernel on OpenBLAS (to compare)");
  cmd->add_option("--seed", f->seed, "Seed")->check(check::seed())->capture_default_str();
  cmd->add_option("--turn-steps", f->turn_steps,
                  "Take turns with another process (bench/compare_seq2seq.sh, TURNS=N): this many training steps a turn")
      ->check(check::integer(1, 1000000));
  cmd->add_option("--turn-fifos", f->turn_fifos,
                  "IN,OUT: the FIFOs of --turn-steps: wait for a byte on IN before each turn, write one to OUT after it")
      ->delimiter(',')
      ->expected(2);
  cmd->callback([f] { run_bench(*f); });
}

}  // namespace attend::tools
