#pragma once
// attend train's flags, and the parts of the command built from them:
// train_setup.cpp prepares the data and the model, train_progress.cpp shows the
// run's progress; cmd_train.cpp reads the flags and runs the loop.
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "models/data/dataset.hpp"
#include "models/model_dir.hpp"
#include "models/seq2seq.hpp"
#include "models/train/distributed.hpp"
#include "models/train/trainer.hpp"
#include "tools/cli/data_options.hpp"

namespace attend::tools {

struct TrainFlags {
  DataFlags data;
  std::string attention = "additive";
  std::int64_t embed = 64, hidden = 128, layers = 1;
  bool bidirectional = true;  // as in Bahdanau et al.: each h_j sees the whole sentence
  double dropout = 0.0;
  // Adam at 2e-3 rather than the library's (PyTorch's) 1e-3, as attend
  // experiment trains; the README's 5-minute toy figures are with it.
  TrainOptions train = [] {
    TrainOptions o;
    o.lr = 2e-3;
    return o;
  }();
  std::string optimizer = "adam";  // --optimizer, as train.optimizer names it (training_options)
  int threads = 1;
  std::string out = "model";
  bool resume = false;
  bool overwrite = false;
  // Whether --lr and --data-seed were given, recorded while the flags are
  // parsed: the CLI11 options themselves die with their App, which a caller
  // (the Python module's attend.train) need not keep alive through the run.
  bool lr_given = false;
  std::string subword_sides = "joint";
  std::uint64_t data_seed = 1;
  bool data_seed_given = false;
};

// ---- cmd_train.cpp: the command ----------------------------------------------

// train's flags and their checks on cmd (add_train_command adds them with its
// callback; the Python module's attend.train parses its arguments through them).
void add_train_flags(CLI::App& cmd, TrainFlags& f);
// The whole run of `attend train` with parsed flags. Without `stop`, SIGINT and
// SIGTERM stop it (the command's handlers, installed for the run); with it, the
// caller's flag does, and the caller handles the signals. A stopped run saves its
// checkpoint and throws CLI::RuntimeError(128 + the signal; 130 for `stop`).
void run_train(TrainFlags& f, const std::atomic<bool>* stop = nullptr);

// ---- train_setup.cpp: the data and the model --------------------------------------

// The options of the Trainer from the flags (the optimizer's name as an OptimizerKind).
TrainOptions training_options(const TrainFlags& f);
// --subword and --spm-model* checked and set in f.data.subword; with --resume, the
// SentencePiece models saved in --out instead. Returns what config.json records of
// them (null for words).
nlohmann::json prepare_subwords(TrainFlags& f);
// The data, the same on every rank (checked under MPI).
Dataset load_training_data(Communicator& world, const TrainFlags& f);
// A new model's configuration from the flags, or the resumed run's (read by rank 0).
Seq2SeqConfig model_config(Communicator& world, const TrainFlags& f, const Dataset& data);
// The lines that say what is being trained, before the first step.
void print_setup(const Communicator& world, const TrainFlags& f, const Dataset& data, const Seq2Seq& model);
// A new run's config.json, vocabularies and subword models, in the staged directory.
void save_description(const std::string& dir, const TrainFlags& f, const Dataset& data, const Seq2SeqConfig& config,
                      const nlohmann::json& subword);

// ---- train_progress.cpp: what the run shows -----------------------------------

// A value an epoch does not have is "-".
std::string value_or_dash(bool has, double v, int digits);
// A progress bar per epoch on the terminal (a line per epoch otherwise), and the
// epoch's losses and BLEU when it ends.
TrainHooks progress_hooks(const TrainFlags& f, const Dataset& data);
// The "best: epoch ..." line at the end of a run.
void print_best(const TrainFlags& f, const Dataset& data, const Trainer& trainer);

}  // namespace attend::tools
