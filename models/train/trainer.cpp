#include "models/train/trainer.hpp"

#include <chrono>
#include <cmath>
#include <filesystem>
#include <map>

#include <nlohmann/json.hpp>

#include "autograd/grad_mode.hpp"
#include "core/io/file_io.hpp"
#include "layers/serialize.hpp"
#include "models/eval/bleu.hpp"
#include "models/train/checkpoint.hpp"
#include "models/model_dir.hpp"
#include "models/data/tokenizer.hpp"

namespace attend {

namespace {
double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

nlohmann::json generator_json(const Generator& g) {
  auto s = g.state();
  return nlohmann::json::array({s[0], s[1], s[2], s[3]});
}

// Puts the model in evaluation mode for the scope, then back in training mode.
struct EvalScope {
  explicit EvalScope(Seq2Seq& m) : model(m) { model.eval(); }
  ~EvalScope() { model.train(); }
  Seq2Seq& model;
};
}  // namespace

std::unique_ptr<optim::Optimizer> make_optimizer(const std::string& name, const std::vector<Tensor>& params, double lr) {
  if (name == "adam") {
    optim::AdamOptions o;
    o.lr = lr;
    return std::make_unique<optim::Adam>(params, o);
  }
  if (name == "sgd") return std::make_unique<optim::SGD>(params, lr);
  if (name == "adadelta") {
    optim::AdadeltaOptions o;
    o.lr = lr;
    return std::make_unique<optim::Adadelta>(params, o);
  }
  fail("unknown optimizer '{}': choose adam, sgd or adadelta", name);
}

Trainer::Trainer(Seq2Seq& model, const Vocabulary& target_vocab, const std::vector<EncodedPair>& train,
                 const std::vector<EncodedPair>& valid, TrainOptions options)
    : model_(model),
      target_vocab_(target_vocab),
      train_(train),
      valid_(valid),
      options_(std::move(options)),
      optimizer_(make_optimizer(options_.optimizer, model.parameters(), options_.lr)),
      sampling_(options_.seed ^ 0x5eed5eedULL) {
  if (options_.batch < 1) fail("train: batch size must be positive, got {}", options_.batch);
  if (options_.epochs < 1) fail("train: epochs must be positive, got {}", options_.epochs);
  if (train_.empty()) fail("train: no training pairs");
}

double Trainer::elapsed_seconds() const { return elapsed_before_ + (now_seconds() - session_start_); }

bool Trainer::out_of_time() const {
  if (options_.max_steps > 0 && global_step_ >= options_.max_steps) return true;
  if (distributed()) return agreed_time_up_;  // the ranks' clocks differ: decided together
  return options_.minutes > 0 && elapsed_seconds() >= options_.minutes * 60;
}

double Trainer::evaluate_loss(const std::vector<EncodedPair>& data) {
  if (data.empty()) return NAN;
  EvalScope eval(model_);
  NoGradGuard no_grad;
  BatchingOptions batching;
  batching.batch_size = options_.batch;
  batching.shuffle = false;
  BatchOptions batch_options;
  batch_options.mask_dtype = model_.dtype();
  double sum = 0;
  std::int64_t tokens = 0;
  std::int64_t index = 0;
  const int ranks = distributed() ? comm_->size() : 1, rank = distributed() ? comm_->rank() : 0;
  for (BatchIterator it(data, batching, 0, 0, 0, batch_options); !it.done(); ++index) {
    Batch b = it.next();
    if (index % ranks != rank) continue;  // under MPI each rank evaluates every ranks-th batch
    sum += model_.loss(b).item() * static_cast<double>(b.target_tokens);
    tokens += b.target_tokens;
  }
  if (distributed()) {
    double totals[2] = {sum, static_cast<double>(tokens)};
    comm_->sum(std::span<double>(totals));
    return totals[0] / totals[1];
  }
  return sum / static_cast<double>(tokens);
}

double Trainer::evaluate_bleu(const std::vector<EncodedPair>& data, std::int64_t limit,
                              const std::vector<std::string>& references_as_written) {
  const std::int64_t n = std::min<std::int64_t>(limit, static_cast<std::int64_t>(data.size()));
  if (n <= 0) return NAN;
  if (!references_as_written.empty() && references_as_written.size() != data.size())
    fail("evaluate_bleu: {} references for {} pairs", references_as_written.size(), data.size());
  EvalScope eval(model_);
  std::vector<EncodedPair> subset(data.begin(), data.begin() + n);
  BatchingOptions batching;
  batching.batch_size = options_.batch;
  batching.shuffle = false;
  BatchOptions batch_options;
  batch_options.mask_dtype = model_.dtype();
  std::vector<std::string> hypotheses, references;
  for (BatchIterator it(subset, batching, 0, 0, 0, batch_options); !it.done();) {
    Batch b = it.next();
    std::vector<Hypothesis> out = greedy_decode(model_, b);
    for (std::int64_t i = 0; i < b.size(); ++i) {
      hypotheses.push_back(target_codec.decode(target_vocab_.decode(strip_eos(out[i].tokens), true)));
      const std::int64_t id = b.example_ids[i];
      references.push_back(references_as_written.empty()
                               ? target_codec.decode(target_vocab_.decode(subset[id].target, true))
                               : references_as_written[static_cast<std::size_t>(id)]);
    }
  }
  return corpus_bleu(hypotheses, references).score;
}

std::vector<EpochReport> Trainer::run() {
  session_start_ = now_seconds();
  if (writes_files()) {
    std::filesystem::create_directories(options_.out_dir);
    remove_stale_temporaries(options_.out_dir);  // left by a kill -9 of an earlier run
  }
  BatchingOptions batching;
  batching.batch_size = options_.batch;
  BatchOptions batch_options;
  batch_options.mask_dtype = model_.dtype();
  LossOptions loss_options;
  loss_options.label_smoothing = options_.label_smoothing;
  loss_options.teacher_forcing = options_.teacher_forcing;
  const std::vector<Tensor> params = model_.parameters();
  model_.train();
  std::vector<EpochReport> reports;
  auto save_and_return = [&] {
    elapsed_before_ = elapsed_seconds();  // a later run() starts a new session
    session_start_ = now_seconds();
    if (!options_.out_dir.empty()) save_checkpoint();
    return reports;
  };
  while (epoch_ < options_.epochs) {
    BatchIterator it(train_, batching, options_.seed, epoch_, position_, batch_options);
    const std::int64_t steps_in_epoch = it.size();
    while (!it.done()) {
      if (stop_requested()) return save_and_return();
      if (out_of_time()) {
        finish_epoch(epoch_loss_sum_, epoch_tokens_, epoch_steps_, false);
        reports.push_back(history_.back());
        return save_and_return();
      }
      const double t0 = now_seconds();
      double loss_value;
      std::int64_t batch_tokens = 0;  // the global batch's, under MPI
      if (distributed()) {
        loss_value = data_parallel_step(it, loss_options, steps_in_epoch, batch_tokens);
      } else {
        Batch batch = it.next();
        batch_tokens = batch.target_tokens;
        optimizer_->zero_grad();
        std::unique_ptr<AnomalyGuard> anomaly;
        if (options_.detect_anomaly) anomaly = std::make_unique<AnomalyGuard>();
        Tensor loss = model_.loss(batch, loss_options, &sampling_);
        loss_value = loss.item();
        if (!std::isfinite(loss_value))
          fail("training stopped: the loss is {} at step {} (epoch {}, batch {} of {}); rerun with --detect-anomaly "
               "to find the first op that made a non-finite value",
               loss_value, global_step_ + 1, epoch_ + 1, it.position(), steps_in_epoch);
        loss.backward();
      }
      if (options_.clip > 0) optim::clip_grad_norm(params, options_.clip);
      optimizer_->step();
      if (options_.detect_anomaly) {
        const std::string bad = first_non_finite_parameter(model_);
        if (!bad.empty())
          fail("anomaly: the optimizer step made the weights non-finite ('{}') at step {} (epoch {}, batch {} of {}); "
               "the loss and the gradients were finite: lower --lr or --clip",
               bad, global_step_ + 1, epoch_ + 1, it.position(), steps_in_epoch);
      }
      ++global_step_;
      ++epoch_steps_;
      position_ = it.position();
      epoch_loss_sum_ += loss_value * static_cast<double>(batch_tokens);
      epoch_tokens_ += batch_tokens;
      curve_loss_sum_ += loss_value * static_cast<double>(batch_tokens);
      curve_tokens_ += batch_tokens;
      if (options_.curve_every > 0 && global_step_ % options_.curve_every == 0) {
        const std::int64_t n = std::min<std::int64_t>(options_.curve_sentences, static_cast<std::int64_t>(valid_.size()));
        CurvePoint p;
        p.step = global_step_;
        p.train_loss = curve_loss_sum_ / static_cast<double>(curve_tokens_);
        p.valid_loss = evaluate_loss(std::vector<EncodedPair>(valid_.begin(), valid_.begin() + n));
        p.elapsed_seconds = elapsed_seconds();
        curve_.push_back(p);
        curve_loss_sum_ = 0;
        curve_tokens_ = 0;
      }
      if (on_step) {
        StepReport r;
        r.epoch = epoch_ + 1;
        r.step = position_;
        r.steps_in_epoch = steps_in_epoch;
        r.global_step = global_step_;
        r.loss = loss_value;
        r.tokens_per_second = static_cast<double>(batch_tokens) / std::max(now_seconds() - t0, 1e-9);
        r.elapsed_seconds = elapsed_seconds();
        on_step(r);
      }
    }
    finish_epoch(epoch_loss_sum_, epoch_tokens_, epoch_steps_, true);
    reports.push_back(history_.back());
    ++epoch_;
    position_ = 0;
    epoch_loss_sum_ = 0;
    epoch_tokens_ = 0;
    epoch_steps_ = 0;
    if (!options_.out_dir.empty()) save_checkpoint();
  }
  return save_and_return();
}

void Trainer::finish_epoch(double loss_sum, std::int64_t tokens, std::int64_t steps, bool complete) {
  EpochReport r;
  r.epoch = epoch_ + 1;
  r.steps = steps;
  r.complete = complete;
  // An epoch can end before its first step (--max-steps reached at the end of
  // the previous one, or time up): it has no training loss, NaN, which the log
  // shows as an empty field and the command line as "-".
  r.train_loss = tokens > 0 ? loss_sum / static_cast<double>(tokens) : NAN;
  r.valid_loss = evaluate_loss(valid_);
  r.valid_perplexity = std::exp(r.valid_loss);
  // Under MPI rank 0 alone decodes for BLEU (it alone reports it).
  r.valid_bleu = options_.bleu_sentences > 0 && is_root() ? evaluate_bleu(valid_, options_.bleu_sentences, valid_references) : NAN;
  r.elapsed_seconds = elapsed_seconds();
  // The best model is the one with the lowest validation loss; without
  // validation data, the lowest training loss. Losses of one kind are only
  // ever compared with losses of the same kind, and a NaN (from non-finite
  // weights) is never better than anything. An epoch without a step has no
  // training loss to compare, and its weights are the previous report's.
  const bool validated = !valid_.empty();
  const bool has_key = validated || steps > 0;
  const double key = validated ? r.valid_loss : r.train_loss;
  double& best = validated ? best_valid_loss_ : best_train_loss_;
  r.best = has_key && std::isfinite(key) && key < best && first_non_finite_parameter(model_).empty();
  if (r.best) {
    best = key;
    if (writes_files()) {
      std::map<std::string, std::string> metadata = {{"epoch", std::to_string(r.epoch)}};
      if (validated) metadata["valid_loss"] = fmt::format("{:.6f}", r.valid_loss);
      nn::save(model_, path_in(options_.out_dir, "model.safetensors"), metadata);
    }
  }
  history_.push_back(r);
  if (writes_files()) write_log();
  if (on_epoch) on_epoch(r);
}

// The whole log, rewritten from history_ (which the checkpoint holds): after a
// resume it has exactly the checkpoint's rows, never a row twice, and never
// rows of an unrelated earlier run.
// A value an epoch does not have (no step, no validation data, BLEU off) is an
// empty field, which CSV readers take as missing, never "nan".
void Trainer::write_log() const {
  const bool validated = !valid_.empty(), scored = validated && options_.bleu_sentences > 0;
  auto field = [](bool has, double value, int digits) { return has ? fmt::format("{:.{}f}", value, digits) : ""; };
  std::string text = "epoch,complete,steps,train_loss,valid_loss,valid_perplexity,valid_bleu,elapsed_seconds\n";
  for (const EpochReport& r : history_)
    text += fmt::format("{},{},{},{},{},{},{},{:.1f}\n", r.epoch, r.complete ? 1 : 0, r.steps,
                        field(r.steps > 0, r.train_loss, 6), field(validated, r.valid_loss, 6),
                        field(validated, std::exp(r.valid_loss), 4), field(scored, r.valid_bleu, 2), r.elapsed_seconds);
  write_file_atomic(path_in(options_.out_dir, "train_log.csv"), text);
}

void Trainer::save_checkpoint() const {
  const std::vector<std::uint64_t> rank_generators = gather_rank_generators();  // collective under MPI
  // Every rank holds the same weights, so every rank stops here alike.
  const std::string bad = first_non_finite_parameter(model_);
  if (!bad.empty())
    fail("training stopped: the weights are not finite after step {} ('{}' holds a NaN or infinity); nothing was "
         "saved, {} keeps the previous checkpoint; lower --lr or --clip",
         global_step_, bad, options_.out_dir);
  if (!writes_files()) return;
  nlohmann::json history = nlohmann::json::array();
  for (const EpochReport& r : history_)
    history.push_back({{"epoch", r.epoch}, {"steps", r.steps}, {"complete", r.complete}, {"best", r.best},
                       {"train_loss", r.train_loss}, {"valid_loss", r.valid_loss}, {"valid_bleu", r.valid_bleu},
                       {"elapsed_seconds", r.elapsed_seconds}});
  nlohmann::json state = {
      {"epoch", epoch_},
      {"position", position_},
      {"global_step", global_step_},
      {"epoch_loss_sum", epoch_loss_sum_},
      {"epoch_tokens", epoch_tokens_},
      {"epoch_steps", epoch_steps_},
      {"elapsed_seconds", elapsed_seconds()},
      {"best_valid_loss", best_valid_loss_},
      {"best_train_loss", best_train_loss_},
      {"sampling_generator", generator_json(sampling_)},
      {"dropout_generator", generator_json(model_.dropout_generator())},
      {"encoder_dropout_generator", generator_json(model_.encoder.dropout_generator())},
      {"history", history},
  };
  if (!rank_generators.empty()) state["rank_generators"] = rank_generators;  // written under MPI
  write_checkpoint(options_.out_dir, model_, *optimizer_, state);
  if (on_checkpoint) on_checkpoint();
}

void Trainer::resume() {
  if (!distributed()) return resume_from_files();
  // Rank 0 reads the checkpoint (the other hosts may not have it) and sends it on.
  std::string failure;
  if (comm_->is_root()) {
    try {
      resume_from_files();
    } catch (const std::exception& e) {
      failure = e.what();
    }
  }
  agree_on_failure(*comm_, !failure.empty(), failure);
  share_resumed_state();
}

void Trainer::resume_from_files() {
  nlohmann::json state = read_checkpoint(options_.out_dir, model_, *optimizer_);
  const std::string path = path_in(checkpoint_dir(options_.out_dir), "trainer_state.json");
  try {
    epoch_ = state_count(state, "epoch", path);
    position_ = state_count(state, "position", path);
    global_step_ = state_count(state, "global_step", path);
    epoch_loss_sum_ = state_number(state, "epoch_loss_sum", path);
    epoch_tokens_ = state_count(state, "epoch_tokens", path);
    epoch_steps_ = state_count(state, "epoch_steps", path);
    elapsed_before_ = state_number(state, "elapsed_seconds", path);
    best_valid_loss_ = state_number(state, "best_valid_loss", path);
    best_train_loss_ = state_number(state, "best_train_loss", path);
    // JSON has no infinity: "no best yet" is written as null and read as NaN.
    if (std::isnan(best_valid_loss_)) best_valid_loss_ = INFINITY;
    if (std::isnan(best_train_loss_)) best_train_loss_ = INFINITY;
    sampling_.set_state(state_generator(state, "sampling_generator", path));
    model_.dropout_generator().set_state(state_generator(state, "dropout_generator", path));
    model_.encoder.dropout_generator().set_state(state_generator(state, "encoder_dropout_generator", path));
    resumed_rank_generators_.clear();
    if (state.contains("rank_generators"))  // a run under MPI: every rank's generators
      resumed_rank_generators_ = state.at("rank_generators").get<std::vector<std::uint64_t>>();
    if (!state.contains("history") || !state["history"].is_array()) fail("resume: {}: 'history' must be an array", path);
    history_.clear();
    for (const auto& h : state["history"]) {
      if (!h.is_object()) fail("resume: {}: 'history' must hold objects", path);
      EpochReport r;
      r.epoch = state_count(h, "epoch", path);
      r.steps = state_count(h, "steps", path);
      r.complete = h.at("complete").get<bool>();
      r.best = h.value("best", false);
      r.train_loss = state_number(h, "train_loss", path);
      r.valid_loss = state_number(h, "valid_loss", path);
      r.valid_perplexity = std::exp(r.valid_loss);
      r.valid_bleu = state_number(h, "valid_bleu", path);
      r.elapsed_seconds = state_number(h, "elapsed_seconds", path);
      history_.push_back(r);
    }
  } catch (const nlohmann::json::exception& e) {
    fail("resume: {}: {}", path, e.what());
  }
  if (global_step_ < epoch_steps_ || position_ < epoch_steps_)
    fail("resume: {}: 'global_step' {}, 'position' {} and 'epoch_steps' {} contradict each other", path, global_step_,
         position_, epoch_steps_);
  // The log may hold a row written after this checkpoint (a kill between the two).
  write_log();
}

}  // namespace attend
