// attend bench: the speed of one training step (forward, backward, clipping,
// Adam) and of greedy decoding, on random data, after warm-up. Its PyTorch twin
// is bench/torch_seq2seq.py, with the same flags and the same model.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>

#include <fmt/format.h>

#include "core/blas.hpp"
#include "core/limits.hpp"
#include "models/decoding.hpp"
#include "models/trainer.hpp"
#include "tools/checks.hpp"
#include "tools/commands.hpp"

namespace attend::tools {

namespace {

struct BenchFlags {
  std::string attention = "additive";
  std::int64_t embed = 32, hidden = 64, layers = 1, batch = 16, src_len = 20, tgt_len = 20, vocab = 1000;
  bool bidirectional = false;
  int steps = 20, warmup = 3, threads = 1;
  std::uint64_t seed = 1;
};

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double median(std::vector<double> v) {
  if (v.empty()) fail("bench: no timed runs to take the median of");
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Multiply-adds x 2 of the step's matrix products, forward + backward (3x the
// forward), counted as bench/torch_seq2seq.py counts them.
double flops_per_step(const BenchFlags& f) {
  const double B = f.batch, S = f.src_len, T = f.tgt_len, E = f.embed, H = f.hidden, V = f.vocab;
  const double D = f.bidirectional ? 2 : 1, Hk = D * H;
  double enc = 0, in = E;
  for (int l = 0; l < f.layers; ++l) {
    enc += D * B * S * 4 * H * (in + H);
    in = Hk;
  }
  double dec = B * T * 4 * H * (E + H + H);
  if (f.attention != "none") {
    dec += B * S * Hk * H;
    dec += B * T * (H * H + 2 * S * Hk + (f.attention == "additive" ? S * H : 0));
    dec += B * T * (H + Hk) * H;
  } else {
    dec += B * T * H * H;
  }
  dec += B * T * H * V;
  return 3 * 2 * (enc + dec);
}

void run_bench(const BenchFlags& f) {
  blas::set_num_threads(f.threads);
  Seq2SeqConfig c;
  c.source_vocab = c.target_vocab = f.vocab;
  c.embed = f.embed;
  c.hidden = f.hidden;
  c.layers = f.layers;
  c.bidirectional = f.bidirectional;
  c.attention = parse_attention(f.attention);
  c.validate();  // the model's size against core/limits.hpp, before anything is allocated
  Generator gen(f.seed);
  Seq2Seq model(c, gen);
  // Random sentences of exactly src_len and tgt_len tokens (ids 4.. are words).
  std::vector<EncodedPair> data(static_cast<std::size_t>(f.batch));
  for (EncodedPair& p : data) {
    for (std::int64_t i = 0; i < f.src_len; ++i) p.source.push_back(4 + gen.randint(f.vocab - 4));
    for (std::int64_t i = 0; i + 1 < f.tgt_len; ++i) p.target.push_back(4 + gen.randint(f.vocab - 4));  // + </s>
  }
  std::vector<std::int64_t> ids(data.size());
  for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<std::int64_t>(i);
  Batch batch = make_batch(data, ids);
  auto optimizer = make_optimizer("adam", model.parameters(), 1e-3);
  const std::vector<Tensor> params = model.parameters();
  std::vector<double> times;
  for (int i = 0; i < f.warmup + f.steps; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    optimizer->zero_grad();
    Tensor loss = model.loss(batch);
    loss.backward();
    optim::clip_grad_norm(params, 5.0);
    optimizer->step();
    if (i >= f.warmup) times.push_back(seconds_since(t0));
  }
  model.eval();
  DecodeOptions greedy;
  greedy.max_len_a = 0;
  greedy.max_len_b = f.tgt_len;  // the same number of steps as PyTorch's twin
  std::vector<double> decode_times;
  for (int i = 0; i < 2 + std::max(3, f.steps / 4); ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    greedy_decode(model, batch, greedy);
    if (i >= 2) decode_times.push_back(seconds_since(t0));
  }
  const double step_ms = median(times) * 1e3, decode_ms = median(decode_times) * 1e3;
  const double tokens = static_cast<double>(f.batch * f.tgt_len), gflop = flops_per_step(f) / 1e9;
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  fmt::print("attend  threads {}  attention {}\n", f.threads, f.attention);
  fmt::print("train step   median {:9.2f} ms   {:10.0f} target tokens/s   {:.2f} GFLOP/step   {:.1f} GFLOP/s\n", step_ms,
             tokens / (step_ms / 1e3), gflop, gflop / (step_ms / 1e3));
  fmt::print("greedy decode median {:9.2f} ms   {:10.0f} tokens/s\n", decode_ms, tokens / (decode_ms / 1e3));
  fmt::print("peak RSS     {:.0f} MB\n", static_cast<double>(usage.ru_maxrss) / 1024);
}

}  // namespace

void add_bench_command(CLI::App& app) {
  auto f = std::make_shared<BenchFlags>();
  auto* cmd = app.add_subcommand("bench", "Time training steps and greedy decoding on random data (twin: bench/torch_seq2seq.py)");
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
  cmd->add_option("--threads", f->threads, "OpenBLAS threads")->check(check::threads())->capture_default_str();
  cmd->add_option("--seed", f->seed, "Seed")->capture_default_str();
  cmd->callback([f] { run_bench(*f); });
}

}  // namespace attend::tools
