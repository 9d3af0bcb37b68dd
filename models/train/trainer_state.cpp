// The Trainer's files (models/train/trainer.hpp): train_log.csv, and the
// checkpoint of its position that resume() reads back.
#include <cmath>

#include <nlohmann/json.hpp>

#include "core/io/file_io.hpp"
#include "models/model_dir.hpp"
#include "models/train/checkpoint.hpp"
#include "models/train/trainer.hpp"

namespace attend {

namespace {
nlohmann::json generator_json(const Generator& g) {
  auto s = g.state();
  return nlohmann::json::array({s[0], s[1], s[2], s[3]});
}
}  // namespace

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

void Trainer::save_checkpoint() {
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
  if (hooks_.on_checkpoint) hooks_.on_checkpoint(*this);
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
