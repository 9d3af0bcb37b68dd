#include "models/train/trainer.hpp"

#include <chrono>
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>

#include "autograd/grad_mode.hpp"
#include "core/io/file_io.hpp"
#include "layers/serialize.hpp"
#include "models/train/checkpoint.hpp"
#include "models/model_dir.hpp"

namespace attend {

namespace {
double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

bool finite_in(double x, double lo, double hi) { return std::isfinite(x) && x >= lo && x <= hi; }

TrainOptions validated(TrainOptions o) {
  o.validate();
  return o;
}
}  // namespace

const char* optimizer_name(OptimizerKind kind) {
  switch (kind) {
    case OptimizerKind::Adam: return "adam";
    case OptimizerKind::SGD: return "sgd";
    case OptimizerKind::Adadelta: return "adadelta";
  }
  fail("optimizer_name: {} is not an OptimizerKind", static_cast<int>(kind));
}

std::unique_ptr<optim::Optimizer> make_optimizer(OptimizerKind kind, const std::vector<Tensor>& params, double lr) {
  switch (kind) {
    case OptimizerKind::Adam: {
      optim::AdamOptions o;
      o.lr = lr;
      return std::make_unique<optim::Adam>(params, o);
    }
    case OptimizerKind::SGD: return std::make_unique<optim::SGD>(params, lr);
    case OptimizerKind::Adadelta: {
      optim::AdadeltaOptions o;
      o.lr = lr;
      return std::make_unique<optim::Adadelta>(params, o);
    }
  }
  fail("make_optimizer: {} is not an OptimizerKind", static_cast<int>(kind));
}

void TrainOptions::validate() const {
  const double most = std::numeric_limits<double>::max();
  if (batch < 1) fail("TrainOptions: batch must be positive, got {}", batch);
  if (epochs < 1) fail("TrainOptions: epochs must be positive, got {}", epochs);
  if (!finite_in(minutes, 0, most)) fail("TrainOptions: minutes must be finite and >= 0 (0: no limit), got {}", minutes);
  if (max_steps < 0) fail("TrainOptions: max_steps must be >= 0 (0: no limit), got {}", max_steps);
  optimizer_name(optimizer);  // throws for a value outside the enum
  if (!finite_in(lr, 0, most) || lr == 0) fail("TrainOptions: lr must be positive and finite, got {}", lr);
  if (!finite_in(clip, 0, most)) fail("TrainOptions: clip must be finite and >= 0 (0: off), got {}", clip);
  if (!finite_in(label_smoothing, 0, 0.99))
    fail("TrainOptions: label_smoothing must be in [0, 0.99], got {}", label_smoothing);
  if (!finite_in(teacher_forcing, 0, 1)) fail("TrainOptions: teacher_forcing must be in [0, 1], got {}", teacher_forcing);
  if (bleu_sentences < 0) fail("TrainOptions: bleu_sentences must be >= 0 (0: none), got {}", bleu_sentences);
  if (curve_every < 0) fail("TrainOptions: curve_every must be >= 0 (0: never), got {}", curve_every);
  if (curve_sentences < 0) fail("TrainOptions: curve_sentences must be >= 0, got {}", curve_sentences);
}

Trainer::Trainer(Seq2Seq& model, const Vocabulary& target_vocab, const std::vector<EncodedPair>& train,
                 const std::vector<EncodedPair>& valid, TrainOptions options, TrainHooks hooks)
    : model_(model),
      target_vocab_(target_vocab),
      train_(train),
      valid_(valid),
      options_(validated(std::move(options))),
      hooks_(std::move(hooks)),
      optimizer_(make_optimizer(options_.optimizer, model.parameters(), options_.lr)),
      sampling_(options_.seed ^ 0x5eed5eedULL) {
  if (train_.empty()) fail("train: no training pairs");
  if (!options_.valid_references.empty() && options_.valid_references.size() != valid_.size())
    fail("TrainOptions: valid_references holds {} references for {} validation pairs", options_.valid_references.size(),
         valid_.size());
}

double Trainer::elapsed_seconds() const { return elapsed_before_ + (now_seconds() - session_start_); }

bool Trainer::out_of_time() const {
  if (options_.max_steps > 0 && global_step_ >= options_.max_steps) return true;
  if (distributed()) return agreed_time_up_;  // the ranks' clocks differ: decided together
  return options_.minutes > 0 && elapsed_seconds() >= options_.minutes * 60;
}

// A run resumed past its max_steps or minutes could take no step: it would only
// add an epoch without a step to the log at every attempt. Every rank holds the
// same resumed state, so under MPI every rank refuses alike.
void Trainer::check_steps_left() const {
  if (epoch_ >= options_.epochs) return;  // finished: run() only saves the checkpoint again
  std::string why;
  if (options_.max_steps > 0 && global_step_ >= options_.max_steps)
    why = fmt::format("the run is at step {} and max_steps is {}", global_step_, options_.max_steps);
  else if (options_.minutes > 0 && elapsed_before_ >= options_.minutes * 60)
    why = fmt::format("the run has trained {:.1f} minutes and minutes is {}", elapsed_before_ / 60, options_.minutes);
  if (why.empty()) return;
  const std::string message = fmt::format("train: no step is left to take: {}; raise the limit to continue", why);
  if (distributed()) throw CollectiveError(message);
  fail("{}", message);
}

std::vector<EpochReport> Trainer::run() {
  check_steps_left();
  session_start_ = now_seconds();
  if (writes_files()) {
    std::filesystem::create_directories(options_.out_dir);
    remove_stale_temporaries(options_.out_dir);  // left by a kill -9 of an earlier run
  }
  model_.train();
  std::vector<EpochReport> reports;
  while (epoch_ < options_.epochs) {
    BatchIterator it(train_, training_batches(), options_.seed, epoch_, position_, batch_options());
    while (!it.done()) {
      if (stop_requested()) return end_session(std::move(reports));
      if (out_of_time()) {
        // An epoch that max_steps or minutes ends before its first step is not
        // begun: it would log a row without a step and validate the previous
        // epoch's weights again. The checkpoint resumes at its start.
        if (epoch_steps_ > 0) {
          finish_epoch(epoch_loss_sum_, epoch_tokens_, epoch_steps_, false);
          reports.push_back(history_.back());
        }
        return end_session(std::move(reports));
      }
      train_step(it);
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
  return end_session(std::move(reports));
}

std::vector<EpochReport> Trainer::end_session(std::vector<EpochReport> reports) {
  elapsed_before_ = elapsed_seconds();  // a later run() starts a new session
  session_start_ = now_seconds();
  if (!options_.out_dir.empty()) save_checkpoint();
  return reports;
}

BatchingOptions Trainer::training_batches() const {
  BatchingOptions batching;
  batching.batch_size = options_.batch;
  return batching;
}

BatchOptions Trainer::batch_options() const {
  BatchOptions o;
  o.mask_dtype = model_.dtype();
  return o;
}

LossOptions Trainer::loss_options() const {
  LossOptions o;
  o.label_smoothing = options_.label_smoothing;
  o.teacher_forcing = options_.teacher_forcing;
  return o;
}

// One step: the batch's loss and gradients (of every rank's shard, under MPI),
// clipping, the optimizer's update, then the sums and reports of the step.
void Trainer::train_step(BatchIterator& it) {
  const double t0 = now_seconds();
  const std::int64_t steps_in_epoch = it.size();
  std::int64_t batch_tokens = 0;  // the global batch's, under MPI
  const double loss = distributed() ? data_parallel_step(it, loss_options(), steps_in_epoch, batch_tokens)
                                    : local_step(it, steps_in_epoch, batch_tokens);
  if (options_.clip > 0) optim::clip_grad_norm(model_.parameters(), options_.clip);
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
  count_step(loss, batch_tokens);
  if (hooks_.on_step) {
    StepReport r;
    r.epoch = epoch_ + 1;
    r.step = position_;
    r.steps_in_epoch = steps_in_epoch;
    r.global_step = global_step_;
    r.loss = loss;
    r.tokens_per_second = static_cast<double>(batch_tokens) / std::max(now_seconds() - t0, 1e-9);
    r.elapsed_seconds = elapsed_seconds();
    hooks_.on_step(r);
  }
}

// Forward and backward of the next batch in one process; returns its loss.
double Trainer::local_step(BatchIterator& it, std::int64_t steps_in_epoch, std::int64_t& tokens) {
  Batch batch = it.next();
  tokens = batch.target_tokens;
  optimizer_->zero_grad();
  std::unique_ptr<AnomalyGuard> anomaly;
  if (options_.detect_anomaly) anomaly = std::make_unique<AnomalyGuard>();
  Tensor loss = model_.loss(batch, loss_options(), &sampling_);
  const double value = loss.item();
  if (!std::isfinite(value))
    fail("training stopped: the loss is {} at step {} (epoch {}, batch {} of {}); rerun with --detect-anomaly "
         "to find the first op that made a non-finite value",
         value, global_step_ + 1, epoch_ + 1, it.position(), steps_in_epoch);
  loss.backward();
  return value;
}

// The epoch's sums, and every curve_every steps a point of the loss curve.
void Trainer::count_step(double loss, std::int64_t tokens) {
  epoch_loss_sum_ += loss * static_cast<double>(tokens);
  epoch_tokens_ += tokens;
  curve_loss_sum_ += loss * static_cast<double>(tokens);
  curve_tokens_ += tokens;
  if (options_.curve_every == 0 || global_step_ % options_.curve_every != 0) return;
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

void Trainer::finish_epoch(double loss_sum, std::int64_t tokens, std::int64_t steps, bool complete) {
  EpochReport r;
  r.epoch = epoch_ + 1;
  r.steps = steps;
  r.complete = complete;
  // run() does not begin an epoch it cannot take a step of; should one still
  // have none, it has no training loss, NaN, which the log shows as an empty
  // field and the command line as "-".
  r.train_loss = tokens > 0 ? loss_sum / static_cast<double>(tokens) : NAN;
  r.valid_loss = evaluate_loss(valid_);
  r.valid_perplexity = std::exp(r.valid_loss);
  // Under MPI rank 0 alone decodes for BLEU (it alone reports it).
  r.valid_bleu = options_.bleu_sentences > 0 && is_root() ? evaluate_bleu(valid_, options_.bleu_sentences, options_.valid_references) : NAN;
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
  if (hooks_.on_epoch) hooks_.on_epoch(r);
}

}  // namespace attend
