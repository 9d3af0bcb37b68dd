#pragma once
// Training a Seq2Seq: the loop (batches, loss, backward, clipping, optimizer),
// validation each epoch (loss, perplexity, BLEU), checkpoints that are written
// atomically, and resuming a run exactly where it stopped.
//
// A checkpoint directory (TrainOptions::out_dir) holds, besides the files of
// models/model_dir.hpp (config.json, model.safetensors = the best model so far,
// the vocabularies):
//   checkpoint/            one atomic unit (models/train/checkpoint.hpp): replaced whole
//     last.safetensors       the model after the last completed step
//     optimizer.safetensors  the optimizer's state
//     trainer_state.json     epoch, position in the epoch, random generators, best
//                            losses, the history of epochs
//   train_log.csv          one row per epoch, rewritten from the checkpoint's history
// --resume reads checkpoint/ and continues with the same data order, the same
// dropout masks and the same optimizer state, so the losses equal those of an
// uninterrupted run.
//
// Crash safety. A kill at any instant leaves either the previous or the new
// checkpoint, never a mix (the generation directory is switched by one rename).
// model.safetensors is saved before the checkpoint that counts its epoch: after a
// kill between the two, --resume replays that epoch bit for bit and saves the
// same model again. train_log.csv is regenerated from the checkpoint on resume,
// so a row written after the checkpoint is dropped, not repeated.
//
// No non-finite weight is ever saved: the best model requires a finite
// validation loss and finite weights, and a checkpoint of non-finite weights
// throws instead (the previous one stays).
#include <atomic>
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "autograd/optim/optim.hpp"
#include "models/data/corpus.hpp"
#include "models/decode/decoding.hpp"
#include "models/train/distributed.hpp"
#include "models/seq2seq.hpp"
#include "models/data/text_codec.hpp"
#include "models/data/vocabulary.hpp"

namespace attend {

// The optimizer a run trains with (autograd/optim/optim.hpp).
enum class OptimizerKind { Adam, SGD, Adadelta };
// "adam", "sgd", "adadelta": what config.json records and the command line takes.
const char* optimizer_name(OptimizerKind kind);
std::unique_ptr<optim::Optimizer> make_optimizer(OptimizerKind kind, const std::vector<Tensor>& params, double lr);

struct TrainOptions {
  std::int64_t batch = 32;
  std::int64_t epochs = 10;
  double minutes = 0;              // stop after this much training time; 0: no limit
  std::int64_t max_steps = 0;      // stop after this many steps in all; 0: no limit
  OptimizerKind optimizer = OptimizerKind::Adam;
  double lr = 1e-3;                // Adadelta's usual lr is 1.0
  double clip = 5.0;               // global gradient L2 norm; 0: off
  double label_smoothing = 0.0;
  double teacher_forcing = 1.0;
  std::uint64_t seed = 1;          // data order and scheduled sampling
  std::int64_t bleu_sentences = 200;  // validation sentences decoded for BLEU each epoch; 0: none
  bool detect_anomaly = false;
  // Every this many steps, the validation loss on the first curve_sentences
  // validation pairs is added to curve() (0: never), for loss-curve plots.
  std::int64_t curve_every = 0;
  std::int64_t curve_sentences = 200;
  std::string out_dir;             // checkpoints; empty: none are written
  // Turns target tokens back into text for validation BLEU (sacreBLEU on
  // detokenized text): words by default; a subword model's codec decodes pieces.
  TextCodec target_codec;
  // The validation targets as written, one per validation pair: validation BLEU
  // scores against them. Empty: against the targets decoded from their ids, in
  // which a word outside the vocabulary is <unk> (a words model then earns
  // credit for writing <unk>, and the score is higher than eval's).
  std::vector<std::string> valid_references;

  // attend::Error naming the first field out of its range.
  void validate() const;
};

struct StepReport {
  std::int64_t epoch = 0, step = 0, steps_in_epoch = 0, global_step = 0;
  double loss = 0, tokens_per_second = 0, elapsed_seconds = 0;
};

struct EpochReport {
  std::int64_t epoch = 0, steps = 0;
  double train_loss = 0;  // mean over the epoch's tokens; NaN when it took no step
  double valid_loss = 0, valid_perplexity = 0, valid_bleu = 0;  // NaN without validation data (BLEU: or when off)
  double elapsed_seconds = 0;  // training time since the run began (over resumes)
  bool best = false;
  bool complete = true;  // false when time or a stop request cut the epoch short
};

struct CurvePoint {
  std::int64_t step = 0;
  double elapsed_seconds = 0;
  double train_loss = 0;  // mean per token over the steps since the previous point
  double valid_loss = 0;
};

class Trainer;

// What a run tells its caller, and how the caller stops it; every member may stay empty.
struct TrainHooks {
  std::function<void(const StepReport&)> on_step;
  std::function<void(const EpochReport&)> on_epoch;
  // Called after each checkpoint has been committed (it may move the run: Trainer::set_out_dir).
  std::function<void(Trainer&)> on_checkpoint;
  // Checked between steps; when set, the trainer saves a checkpoint and returns.
  const std::atomic<bool>* stop = nullptr;
};

class Trainer {
 public:
  // options are validated here (TrainOptions::validate), with the data they refer to.
  Trainer(Seq2Seq& model, const Vocabulary& target_vocab, const std::vector<EncodedPair>& train,
          const std::vector<EncodedPair>& valid, TrainOptions options, TrainHooks hooks = {});

  // Data-parallel training (models/train/distributed.hpp, models/train/trainer_distributed.cpp):
  // every rank constructs the same Trainer on the same data and calls this before
  // run() or resume(). Rank 0's parameters go to every rank; each rank gets its
  // own dropout and sampling generators; each step sums the gradients of the
  // ranks' shards of the global batch; rank 0 alone writes files (run(),
  // save_checkpoint() and resume() stay collective: every rank calls them).
  void distribute(Communicator& comm);

  // Trains until the epochs, minutes or steps run out or stop is set. Throws
  // attend::Error when the loss stops being finite, naming the step, and before
  // any work when a resumed run has no step left under max_steps or minutes.
  std::vector<EpochReport> run();

  // Mean loss per target token over data, without dropout or gradient.
  double evaluate_loss(const std::vector<EncodedPair>& data);
  // Corpus BLEU of greedy translations of data's first `limit` pairs, against
  // `references` (the targets as written, one per pair) or, when it is empty,
  // against the targets decoded from their ids.
  double evaluate_bleu(const std::vector<EncodedPair>& data, std::int64_t limit,
                       const std::vector<std::string>& references = {});

  // The checkpoint of the current position into options.out_dir/checkpoint;
  // resume() reads it back, checks it, and rewrites train_log.csv to match it.
  // Under MPI every rank calls both (they gather and share state); rank 0 reads
  // and writes.
  void save_checkpoint();
  void resume();
  // Where checkpoints go from now on (a run staged elsewhere, then moved).
  void set_out_dir(std::string dir) { options_.out_dir = std::move(dir); }

  std::int64_t epoch() const { return epoch_; }
  std::int64_t global_step() const { return global_step_; }
  const std::vector<EpochReport>& history() const { return history_; }
  const std::vector<CurvePoint>& curve() const { return curve_; }
  optim::Optimizer& optimizer() { return *optimizer_; }

 private:
  bool out_of_time() const;
  void check_steps_left() const;
  std::vector<EpochReport> end_session(std::vector<EpochReport> reports);
  BatchingOptions training_batches() const;
  BatchOptions batch_options() const;
  LossOptions loss_options() const;
  void train_step(BatchIterator& it);
  double local_step(BatchIterator& it, std::int64_t steps_in_epoch, std::int64_t& tokens);
  void count_step(double loss, std::int64_t tokens);
  double elapsed_seconds() const;  // training seconds over all sessions, this one included
  void finish_epoch(double loss_sum, std::int64_t tokens, std::int64_t steps, bool complete);
  void write_log() const;
  void resume_from_files();

  // Data parallelism (trainer_distributed.cpp); comm_ is null in one process.
  bool distributed() const { return comm_ != nullptr && comm_->size() > 1; }
  bool is_root() const { return comm_ == nullptr || comm_->is_root(); }
  bool writes_files() const { return !options_.out_dir.empty() && is_root(); }
  bool stop_requested() const;
  // Forward and backward of this rank's shard of the next global batch, and the
  // sum of the gradients; returns the global batch's loss and target tokens.
  double data_parallel_step(BatchIterator& it, const LossOptions& loss_options, std::int64_t steps_in_epoch,
                            std::int64_t& global_tokens);
  std::vector<std::uint64_t> gather_rank_generators() const;  // 12 per rank; empty in one process
  void share_resumed_state();

  Communicator* comm_ = nullptr;
  std::unique_ptr<GradientSum> gradient_sum_;
  bool agreed_stop_ = false, agreed_time_up_ = false;  // from the last gradient sum
  std::vector<std::uint64_t> resumed_rank_generators_;

  Seq2Seq& model_;
  const Vocabulary& target_vocab_;
  const std::vector<EncodedPair>& train_;
  const std::vector<EncodedPair>& valid_;
  TrainOptions options_;
  TrainHooks hooks_;
  std::unique_ptr<optim::Optimizer> optimizer_;
  Generator sampling_;
  std::int64_t epoch_ = 0, position_ = 0, global_step_ = 0;
  double epoch_loss_sum_ = 0;  // of the current, unfinished epoch
  std::int64_t epoch_tokens_ = 0, epoch_steps_ = 0;
  // Training time: elapsed_before_ holds the seconds of earlier sessions (resume)
  // and stays fixed while run() runs; elapsed_seconds() adds this session's.
  double elapsed_before_ = 0;
  double best_valid_loss_ = INFINITY, best_train_loss_ = INFINITY;
  std::vector<EpochReport> history_;
  std::vector<CurvePoint> curve_;
  double curve_loss_sum_ = 0;
  std::int64_t curve_tokens_ = 0;
  double session_start_ = 0;
};

}  // namespace attend
