#include "tools/report/experiment.hpp"

#include <algorithm>
#include <chrono>
#include <exception>
#include <filesystem>
#include <mutex>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "autograd/grad_mode.hpp"
#include "core/kernels/blas.hpp"
#include "core/io/file_io.hpp"
#include "layers/serialize.hpp"
#include "models/data/dataset.hpp"
#include "models/eval/evaluation.hpp"
#include "models/model_dir.hpp"
#include "models/train/checkpoint.hpp"
#include "models/train/trainer.hpp"
#include "tools/report/report.hpp"
#include "tools/cli/terminal.hpp"

namespace attend::tools {

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

struct Run {
  std::string name;
  AttentionKind kind;
  std::unique_ptr<Seq2Seq> model;
  std::vector<CurvePoint> curve;
  std::int64_t steps = 0;
  double seconds = 0;
  BleuReport bleu;
  std::atomic<double> last_loss{0};
  std::atomic<std::int64_t> live_steps{0};
};

// DIR/models/NAME: the run's model as a model directory like attend train's
// (config.json, the vocabularies, model.safetensors), for attend translate and
// attend serve. It is staged and put in place whole, replacing the one an
// earlier experiment in DIR left there, as the report and figures are replaced.
void save_run_model(const std::string& out_dir, const Run& r, const Vocabulary& source, const Vocabulary& target,
                    const TokenizerOptions& tokenizer) {
  if (const std::string bad = first_non_finite_parameter(*r.model); !bad.empty()) {
    fmt::print("the {} model is not saved: its parameter {} is not finite\n", r.name, bad);
    return;
  }
  const std::filesystem::path models = std::filesystem::path(out_dir) / "models";
  std::filesystem::create_directories(models);
  StagedModelDir staged((models / r.name).string(), /*overwrite=*/true);
  save_model_description(staged.path(), r.model->config(), source, target, tokenizer);
  nn::save(*r.model, path_in(staged.path(), "model.safetensors"));
  staged.commit();
}

// Runs f(i) for i in [0, n) on n threads and rethrows the first exception.
template <class F>
void in_parallel(std::size_t n, F f) {
  std::vector<std::exception_ptr> errors(n);
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < n; ++i)
    threads.emplace_back([&, i] {
      try {
        f(i);
      } catch (...) {
        errors[i] = std::current_exception();
      }
    });
  for (auto& t : threads) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

// A test set with the same number of sentences in each source-length bucket
// 1-10, 11-20, ..., 51-60 (the toy language starts at 3 words), none of them
// seen in training.
std::vector<SentencePair> bucketed_test_set(std::int64_t per_bucket, std::uint64_t seed, const std::set<std::string>& seen) {
  Generator gen(seed);
  std::vector<SentencePair> out;
  for (int lo = 1; lo <= 51; lo += 10) {
    const int first = std::max(lo, 3), last = lo + 9;
    for (std::int64_t i = 0, tries = 0; i < per_bucket && tries < per_bucket * 100; ++tries) {
      const int length = first + static_cast<int>(gen.randint(last - first + 1));
      ToySentence s = toy_sentence(gen, length);
      SentencePair p{join_words(s.source), join_words(s.target)};
      if (seen.count(p.source)) continue;
      out.push_back(p);
      ++i;
    }
  }
  return out;
}

// Decoder time for t steps over a batch of sources of length m, without early stop.
double decode_milliseconds(Seq2Seq& model, std::int64_t m, std::int64_t t, std::int64_t batch, Generator& gen) {
  std::vector<EncodedPair> data(static_cast<std::size_t>(batch));
  for (EncodedPair& p : data)
    for (std::int64_t i = 0; i < m; ++i) p.source.push_back(4 + gen.randint(model.config().source_vocab - 4));
  std::vector<std::int64_t> ids(data.size());
  for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<std::int64_t>(i);
  Batch b = make_batch(data, ids);
  NoGradGuard no_grad;
  std::vector<double> times;
  for (int rep = 0; rep < 3; ++rep) {
    Seq2Seq::Encoded enc = model.encode(b.source, b.source_lengths, b.source_mask);
    Seq2Seq::State state = model.initial_state(enc);
    std::vector<std::int64_t> previous(static_cast<std::size_t>(batch), Vocabulary::kBos);
    const auto t0 = Clock::now();
    for (std::int64_t k = 0; k < t; ++k) {
      Seq2Seq::Step s = model.step(enc, Indices(previous), state);
      state = s.state;
      model.logits(s.attentional);
    }
    times.push_back(since(t0) * 1e3);
  }
  std::sort(times.begin(), times.end());
  return times[1];
}

// The experiment's sentences, vocabularies and encoded pairs: toy training and
// validation pairs, and a test set none of whose sources was trained on.
struct ExperimentData {
  std::vector<SentencePair> test;
  TokenizerOptions tokenizer;
  Vocabulary source_vocab, target_vocab;
  std::vector<EncodedPair> train, valid;
};

ExperimentData make_data(const ExperimentOptions& o) {
  ExperimentData d;
  ToyCorpusOptions train_toy;
  train_toy.n = o.train_pairs;
  train_toy.seed = o.seed;
  ToyCorpusOptions valid_toy = train_toy;
  valid_toy.n = o.valid_pairs;
  valid_toy.seed = o.seed + 1000;
  std::vector<SentencePair> train_text = toy_pairs(train_toy), valid_text = toy_pairs(valid_toy);
  std::set<std::string> seen;
  for (const SentencePair& p : train_text) seen.insert(p.source);
  d.test = bucketed_test_set(o.test_per_bucket, o.seed + 2000, seen);
  TokenCounts source_counts, target_counts;
  for (const SentencePair& p : train_text) {
    count_tokens(source_counts, tokenize(p.source, d.tokenizer));
    count_tokens(target_counts, tokenize(p.target, d.tokenizer));
  }
  d.source_vocab = Vocabulary::build(source_counts), d.target_vocab = Vocabulary::build(target_counts);
  d.train = encode_pairs(train_text, d.source_vocab, d.target_vocab, d.tokenizer);
  d.valid = encode_pairs(valid_text, d.source_vocab, d.target_vocab, d.tokenizer);
  fmt::print("data: {} training pairs (3-60 words), {} validation, {} test ({} per length bucket); vocabularies {} and {}\n",
             d.train.size(), d.valid.size(), d.test.size(), o.test_per_bucket, d.source_vocab.size(),
             d.target_vocab.size());
  return d;
}

// The three models, without, with additive and with dot-product attention,
// each initialised from the same seed.
std::vector<std::unique_ptr<Run>> make_runs(const ExperimentOptions& o, const ExperimentData& d) {
  std::vector<std::unique_ptr<Run>> runs;
  for (auto [name, kind] : {std::pair{"none", AttentionKind::None}, std::pair{"additive", AttentionKind::Additive},
                            std::pair{"dot", AttentionKind::Dot}}) {
    auto r = std::make_unique<Run>();
    r->name = name;
    r->kind = kind;
    Seq2SeqConfig c;
    c.source_vocab = d.source_vocab.size();
    c.target_vocab = d.target_vocab.size();
    c.embed = o.embed;
    c.hidden = o.hidden;
    c.bidirectional = true;
    c.attention = kind;
    Generator init(o.seed);
    r->model = std::make_unique<Seq2Seq>(c, init);
    runs.push_back(std::move(r));
  }
  return runs;
}

void train_run(Run& r, const ExperimentOptions& o, const ExperimentData& d) {
  TrainOptions t;
  t.batch = o.batch;
  t.epochs = 1000;
  t.minutes = o.train_seconds / 60;
  t.lr = o.lr;
  t.seed = o.seed;
  t.bleu_sentences = 0;
  t.curve_every = o.quick ? 5 : 50;
  t.curve_sentences = o.quick ? 50 : 200;
  TrainHooks hooks;
  hooks.on_step = [&](const StepReport& s) {
    r.last_loss = s.loss;
    r.live_steps = s.global_step;
  };
  Trainer trainer(*r.model, d.target_vocab, d.train, d.valid, t, hooks);
  const auto t0 = Clock::now();
  trainer.run();
  r.seconds = since(t0);
  r.steps = trainer.global_step();
  r.curve = trainer.curve();
}

// The models train on one thread each, for the same time, while a progress bar
// shows each one's loss.
void train_side_by_side(std::vector<std::unique_ptr<Run>>& runs, const ExperimentOptions& o, const ExperimentData& d) {
  fmt::print("training none, additive and dot side by side for {} each (embed {}, hidden {}, bidirectional encoder)\n",
             format_duration(o.train_seconds), o.embed, o.hidden);
  std::atomic<bool> training_done{false};
  std::thread progress([&] {
    ProgressBar bar("training", static_cast<long>(o.train_seconds), is_terminal(stdout), 15.0);
    const auto t0 = Clock::now();
    while (!training_done) {
      std::string status;
      for (const auto& r : runs)
        status += fmt::format("{} {:.3f} ({} steps)  ", r->name, r->last_loss.load(), r->live_steps.load());
      bar.update(std::min(static_cast<long>(since(t0)), static_cast<long>(o.train_seconds)), status);
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    bar.finish("");
  });
  try {
    in_parallel(runs.size(), [&](std::size_t i) { train_run(*runs[i], o, d); });
  } catch (...) {
    training_done = true;
    progress.join();
    throw;
  }
  training_done = true;
  progress.join();
}

// BLEU by source length on the held-out test set; each model saved under DIR/models/.
void evaluate_runs(std::vector<std::unique_ptr<Run>>& runs, const ExperimentOptions& o, const ExperimentData& d) {
  fmt::print("translating the test set with each model...\n");
  in_parallel(runs.size(), [&](std::size_t i) {
    Run& r = *runs[i];
    r.model->eval();
    r.bleu = evaluate_bleu_by_length(*r.model, d.test, d.source_vocab, d.target_vocab, d.tokenizer);
  });
  for (const auto& r : runs) save_run_model(o.out_dir, *r, d.source_vocab, d.target_vocab, d.tokenizer);
  fmt::print("{:>10}", "source len");
  for (const auto& r : runs) fmt::print(" {:>9}", r->name);
  fmt::print("\n");
  for (std::size_t b = 0; b < runs[0]->bleu.buckets.size(); ++b) {
    fmt::print("{:>4}-{:<5}", runs[0]->bleu.buckets[b].lo, runs[0]->bleu.buckets[b].hi);
    for (const auto& r : runs) fmt::print(" {:>9.2f}", r->bleu.buckets[b].bleu.score);
    fmt::print("\n");
  }
}

// The cost of attention: decoding time over a grid of m and t.
nlohmann::json measure_cost(const std::vector<std::unique_ptr<Run>>& runs, const ExperimentOptions& o) {
  fmt::print("measuring decoding cost over m, t in {{{}}}...\n", fmt::join(o.cost_lengths, ", "));
  nlohmann::json cost = nlohmann::json::array();
  Generator cost_gen(o.seed + 3000);
  for (const auto& r : runs) {
    if (r->kind == AttentionKind::Dot) continue;  // additive shows the O(m*t) term; none is the contrast
    for (std::int64_t m : o.cost_lengths)
      for (std::int64_t t : o.cost_lengths) {
        const double ms = decode_milliseconds(*r->model, m, t, 8, cost_gen);
        const std::int64_t A = o.hidden, Hk = 2 * o.hidden;
        // Per sentence and step: v . tanh(k_j + q) over m positions (2A each, plus A tanh)
        // and the context sum_j alpha_j h_j (2 Hk each).
        const double flops = r->kind == AttentionKind::None ? 0.0 : static_cast<double>(t * m * (3 * A + 2 * Hk));
        cost.push_back({{"model", r->name}, {"m", m}, {"t", t}, {"ms", ms}, {"attention_flops", flops}});
      }
  }
  return cost;
}

}  // namespace

void ExperimentOptions::defaults() {
  auto set = [](auto& field, auto value) {
    if (field == 0) field = value;
  };
  if (quick) {
    set(train_pairs, 2000), set(valid_pairs, 100), set(test_per_bucket, 6);
    set(embed, 16), set(hidden, 32), set(batch, 32), set(lr, 0.005);
    set(train_seconds, 12.0);
    if (cost_lengths.empty()) cost_lengths = {5, 10, 20};
  } else {
    set(train_pairs, 60000), set(valid_pairs, 500), set(test_per_bucket, 100);
    set(embed, 64), set(hidden, 128), set(batch, 32), set(lr, 0.002);
    // The three models train side by side; evaluation and the cost grid take the rest.
    set(train_seconds, std::max(30.0, minutes * 60 - 90));
    if (cost_lengths.empty()) cost_lengths = {10, 20, 30, 40, 50, 60};
  }
}

nlohmann::json run_experiment(ExperimentOptions o) {
  o.defaults();
  const auto start = Clock::now();
  std::filesystem::create_directories(o.out_dir);
  // One core per model, the models side by side. Their threads call OpenBLAS at
  // once; core/kernels/blas.cpp lets them only while it has one thread.
  blas::set_num_threads(1);
  const ExperimentData data = make_data(o);
  std::vector<std::unique_ptr<Run>> runs = make_runs(o, data);
  train_side_by_side(runs, o, data);
  evaluate_runs(runs, o, data);
  nlohmann::json cost = measure_cost(runs, o);

  // Pictures: attention and its gradient for a few test sentences, and the report.
  ReportInput report;
  report.options = o;
  report.source_vocab = &data.source_vocab;
  report.target_vocab = &data.target_vocab;
  report.tokenizer = data.tokenizer;
  report.test = &data.test;
  for (const auto& r : runs) report.runs.push_back({r->name, r->model.get(), r->curve, r->steps, r->seconds, r->bleu});
  report.cost = cost;
  nlohmann::json results = write_report(report);
  results["seconds_total"] = since(start);
  write_file_atomic((std::filesystem::path(o.out_dir) / "results.json").string(), results.dump(2) + "\n");
  fmt::print("wrote {}/report.html, results.json and the figures ({} in all)\n", o.out_dir, format_duration(since(start)));
  return results;
}

}  // namespace attend::tools
