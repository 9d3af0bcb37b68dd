// The Trainer under MPI (models/train/distributed.hpp): joining the ranks, the
// data-parallel step, and the state that only rank 0 reads or writes but every
// rank needs (generators at checkpoints, everything at a resume).
//
// Every decision that could send the ranks down different paths (stop, time up,
// failure, a non-finite loss) is made from numbers that every rank holds after
// the same collective call, so they all take the same path and none waits alone.
#include <cmath>

#include <nlohmann/json.hpp>

#include "autograd/grad_mode.hpp"
#include "models/train/trainer.hpp"

namespace attend {

namespace {
// The generators a rank draws from on its own: scheduled sampling, the model's
// dropout and the encoder's dropout between layers.
std::array<Generator*, 3> own_generators(Generator& sampling, Seq2Seq& model) {
  return {&sampling, &model.dropout_generator(), &model.encoder.dropout_generator()};
}

// Rank r > 0 draws from a stream of its own, a function of rank 0's generator
// and r: different masks on every rank, the same in every run.
void derive_for_rank(Generator& g, int rank) {
  if (rank == 0) return;
  g = Generator(g.state()[0] ^ (0x9E3779B97F4A7C15ULL * static_cast<std::uint64_t>(rank)));
}
}  // namespace

void Trainer::distribute(Communicator& comm) {
  comm_ = &comm;
  if (!distributed()) return;
  const std::vector<Tensor> params = model_.parameters();
  broadcast_parameters(comm, params);
  for (Generator* g : own_generators(sampling_, model_)) derive_for_rank(*g, comm.rank());
  gradient_sum_ = std::make_unique<GradientSum>(comm, params);
}

bool Trainer::stop_requested() const {
  if (distributed()) return agreed_stop_;  // a Ctrl-C reaches one rank first: decided together
  return hooks_.stop != nullptr && hooks_.stop->load();
}

double Trainer::data_parallel_step(BatchIterator& it, const LossOptions& loss_options, std::int64_t steps_in_epoch,
                                   std::int64_t& global_tokens) {
  BatchOptions batch_options;
  batch_options.mask_dtype = model_.dtype();
  optimizer_->zero_grad();
  // A failure here is caught, so that this rank still joins the gradient sum and
  // every rank learns of it there, instead of the others waiting for it forever.
  GradientFlags flags;
  std::string failure;
  Shard shard;
  double local_loss = 0;
  try {
    shard = take_shard(*comm_, train_, it.next_ids(), batch_options);
    if (!shard.empty()) {
      std::unique_ptr<AnomalyGuard> anomaly;
      if (options_.detect_anomaly) anomaly = std::make_unique<AnomalyGuard>();
      Tensor loss = model_.loss(shard.batch, loss_options, &sampling_);
      local_loss = loss.item();
      if (std::isfinite(local_loss)) loss.backward();  // else the global loss is not finite either
    }
  } catch (const std::exception& e) {
    flags.failed = true;
    failure = e.what();
  }
  flags.stop = hooks_.stop != nullptr && hooks_.stop->load();
  flags.time_up = options_.minutes > 0 && elapsed_seconds() >= options_.minutes * 60;
  const double weight = shard.empty() ? 0.0 : shard.weight();
  const GradientTotals r = gradient_sum_->sum(weight, local_loss, flags);
  if (r.failed_ranks > 0) agree_on_failure(*comm_, flags.failed, failure);  // throws on every rank
  agreed_stop_ = r.stop;
  agreed_time_up_ = r.time_up;
  if (!std::isfinite(r.loss))
    throw CollectiveError(fmt::format(
        "training stopped: the loss is {} at step {} (epoch {}, batch {} of {}); rerun with --detect-anomaly "
        "to find the first op that made a non-finite value",
        r.loss, global_step_ + 1, epoch_ + 1, it.position(), steps_in_epoch));
  global_tokens = shard.global_tokens;
  return r.loss;
}

std::vector<std::uint64_t> Trainer::gather_rank_generators() const {
  if (!distributed()) return {};
  std::vector<std::uint64_t> mine;  // in the order of own_generators
  const std::array<const Generator*, 3> generators = {&sampling_, &model_.dropout_generator(),
                                                      &model_.encoder.dropout_generator()};
  for (const Generator* g : generators)
    for (std::uint64_t word : g->state()) mine.push_back(word);
  return comm_->all_gather(mine);
}

namespace {
nlohmann::json finite_or_null(double x) { return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(nullptr); }
}  // namespace

void Trainer::share_resumed_state() {
  Communicator& comm = *comm_;
  broadcast_parameters(comm, model_.parameters());
  std::map<std::string, Tensor> optimizer_state;
  if (comm.is_root()) optimizer_state = optimizer_->state_dict();
  broadcast_tensor_map(comm, optimizer_state);
  if (!comm.is_root()) optimizer_->load_state_dict(optimizer_state);

  std::string text;
  if (comm.is_root()) {
    std::vector<std::uint64_t> root_generators;
    for (Generator* g : own_generators(sampling_, model_))
      for (std::uint64_t word : g->state()) root_generators.push_back(word);
    text = nlohmann::json{{"epoch", epoch_},
                          {"position", position_},
                          {"global_step", global_step_},
                          {"epoch_loss_sum", epoch_loss_sum_},
                          {"epoch_tokens", epoch_tokens_},
                          {"epoch_steps", epoch_steps_},
                          {"elapsed_seconds", elapsed_before_},
                          {"best_valid_loss", finite_or_null(best_valid_loss_)},
                          {"best_train_loss", finite_or_null(best_train_loss_)},
                          {"root_generators", root_generators},
                          {"rank_generators", resumed_rank_generators_}}
               .dump();
  }
  broadcast_string(comm, text);
  const nlohmann::json state = nlohmann::json::parse(text);
  epoch_ = state.at("epoch").get<std::int64_t>();
  position_ = state.at("position").get<std::int64_t>();
  global_step_ = state.at("global_step").get<std::int64_t>();
  epoch_loss_sum_ = state.at("epoch_loss_sum").get<double>();
  epoch_tokens_ = state.at("epoch_tokens").get<std::int64_t>();
  epoch_steps_ = state.at("epoch_steps").get<std::int64_t>();
  elapsed_before_ = state.at("elapsed_seconds").get<double>();
  // JSON has no infinity: "no best yet" travels as null.
  best_valid_loss_ = state.at("best_valid_loss").is_null() ? INFINITY : state.at("best_valid_loss").get<double>();
  best_train_loss_ = state.at("best_train_loss").is_null() ? INFINITY : state.at("best_train_loss").get<double>();
  // With as many ranks as the run that wrote the checkpoint, each rank continues
  // its own generators exactly. Otherwise (a checkpoint of one process, or of
  // another number of ranks) each derives them anew from rank 0's: the data order
  // and the weights continue exactly, the dropout masks cannot.
  const auto saved = state.at("rank_generators").get<std::vector<std::uint64_t>>();
  const bool same_ranks = saved.size() == 12 * static_cast<std::size_t>(comm.size());
  const auto words = same_ranks ? saved : state.at("root_generators").get<std::vector<std::uint64_t>>();
  const std::size_t at = same_ranks ? 12 * static_cast<std::size_t>(comm.rank()) : 0;
  std::size_t k = 0;
  for (Generator* g : own_generators(sampling_, model_)) {
    g->set_state({words.at(at + k), words.at(at + k + 1), words.at(at + k + 2), words.at(at + k + 3)});
    k += 4;
    if (!same_ranks) derive_for_rank(*g, comm.rank());
  }
}

}  // namespace attend
