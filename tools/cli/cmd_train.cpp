// attend train: trains a Seq2Seq model on parallel text, the toy language or
// gettext catalogs, with validation each epoch, atomic checkpoints, Ctrl-C that
// saves and exits, and --resume. Under `mpirun -np N` it trains data-parallel
// (models/train/distributed.hpp): rank 0 prints and writes, every rank computes.
//
// Signals: the first SIGINT or SIGTERM asks the trainer to stop after the
// current step, save a checkpoint and exit (status 128 + the signal, as a
// shell reports a signal); a second one ends the process at once, by the
// signal's default action (the committed checkpoint is whole either way).
//
// The command reads its flags into options (add_train_command, training_options),
// prepares the data and builds or resumes the model (train_setup.cpp), runs the
// loop with its progress (train_progress.cpp), and saves as it goes.
#include <atomic>
#include <csignal>
#include <filesystem>
#include <functional>
#include <limits>
#include <optional>

#include <fmt/format.h>

#include "core/kernels/blas.hpp"
#include "core/io/limits.hpp"
#include "tools/cli/checks.hpp"
#include "tools/cli/commands.hpp"
#include "tools/cli/train_command.hpp"

namespace attend::tools {

namespace {

std::atomic<bool> interrupted{false};
std::atomic<int> interrupt_signal{0};
extern "C" void on_interrupt(int sig) {
  // interrupt_signal records the first signal (and tells a second one apart)
  // before interrupted is raised: the handler may run on an OpenBLAS thread.
  int none = 0;
  if (!interrupt_signal.compare_exchange_strong(none, sig)) {  // the second signal: stop now
    std::signal(sig, SIG_DFL);  // signal and raise are async-signal-safe
    std::raise(sig);
    return;
  }
  interrupted = true;
}

// Installs on_interrupt for SIGINT and SIGTERM for its lifetime.
struct InterruptHandlers {
  InterruptHandlers() {
    interrupted = false;
    interrupt_signal = 0;
    previous_int = std::signal(SIGINT, on_interrupt);
    previous_term = std::signal(SIGTERM, on_interrupt);
  }
  ~InterruptHandlers() {
    std::signal(SIGINT, previous_int);
    std::signal(SIGTERM, previous_term);
  }
  void (*previous_int)(int);
  void (*previous_term)(int);
};

// A new run is built beside --out and moved there at its first checkpoint
// (StagedModelDir), by rank 0: the other ranks write nothing. Null with --resume,
// and on every rank but 0.
std::unique_ptr<StagedModelDir> stage_output(Communicator& world, const TrainFlags& f) {
  if (f.resume && f.overwrite) fail("--resume and --overwrite exclude each other: continue the run in {}, or replace it", f.out);
  std::unique_ptr<StagedModelDir> staged;
  std::string failure;
  if (!f.resume && world.is_root()) {
    try {
      staged = std::make_unique<StagedModelDir>(f.out, f.overwrite);
    } catch (const Error& e) {
      if (world.size() == 1) throw;
      failure = e.what();
    }
  }
  if (world.size() > 1) agree_on_failure(world, !failure.empty(), failure);
  return staged;
}

// Until the staged directory is in place, checkpoints go there; it moves to --out at the first
// checkpoint, or, when it replaces a model, at the first checkpoint that has a model to load.
std::function<void(Trainer&)> commit_staged(StagedModelDir* staged) {
  return [staged](Trainer& trainer) {
    if (staged == nullptr || staged->committed()) return;
    if (staged->replaces() && !std::filesystem::exists(path_in(staged->path(), "model.safetensors"))) return;
    staged->commit();
    trainer.set_out_dir(staged->final_dir());
  };
}

void resume(Trainer& trainer, const TrainFlags& f, bool root) {
  trainer.resume();
  if (root) fmt::print("resuming {} at epoch {}, step {}\n", f.out, trainer.epoch() + 1, trainer.global_step());
  // An explicit --lr overrides the checkpoint's (as setting a PyTorch param group's lr after loading would);
  // without it the run keeps the checkpoint's. The new lr is saved with the next checkpoint. Every rank
  // holds the same optimizer state, so every rank applies it alike.
  const double saved_lr = trainer.optimizer().lr();
  if (f.lr_given && f.train.lr != saved_lr) {
    trainer.optimizer().set_lr(f.train.lr);
    if (root) fmt::print("lr: {} (--lr overrides the checkpoint's {})\n", f.train.lr, saved_lr);
  }
}

// After run(): a stop by signal exits 128 + the signal (as a shell reports one; 130, SIGINT's,
// on a rank that stopped for another's), having said where the checkpoint is; otherwise rank 0
// names the best epoch.
void finish(Communicator& world, const TrainFlags& f, const StagedModelDir* staged, const Trainer& trainer,
            const Dataset& data, const std::atomic<bool>& stop) {
  bool stopped = stop;
  if (world.size() > 1) {  // the signal may have reached one rank only; they all stopped
    double any = stopped ? 1 : 0;
    world.sum(std::span<double>(&any, 1));
    stopped = any > 0;
  }
  const int stop_status = 128 + (interrupt_signal.load() != 0 ? interrupt_signal.load() : SIGINT);
  if (!world.is_root()) {
    if (stopped) throw CLI::RuntimeError(stop_status);
    return;
  }
  if (staged && !staged->committed())
    fmt::print("\nno model was saved (the run ended before its first); {} is unchanged\n", f.out);
  if (stopped) {
    if (!staged || staged->committed())
      fmt::print("\ninterrupted: checkpoint saved in {}; continue with the same command and --resume\n", f.out);
    throw CLI::RuntimeError(stop_status);
  }
  if (trainer.epoch() < f.train.epochs)  // not stopped: --max-steps or --minutes ran out
    fmt::print("\ntime is up at step {}, in epoch {} of {}; continue with --resume and a higher --max-steps or --minutes\n",
               trainer.global_step(), trainer.epoch() + 1, f.train.epochs);
  print_best(f, data, trainer);
}

void train(Communicator& world, TrainFlags& f, const std::atomic<bool>* external_stop) {
  // From the start, so that a signal during data loading is not lost either: training then stops at once.
  // A caller with its own stop flag (the Python module) handles the signals itself.
  std::optional<InterruptHandlers> handlers;
  if (external_stop == nullptr) handlers.emplace();
  const std::atomic<bool>& stop = external_stop != nullptr ? *external_stop : interrupted;
  const bool root = world.is_root();  // prints, writes the model directory
  blas::set_num_threads(f.threads);
  // The split follows --seed unless --data-seed is given: models for an
  // ensemble differ in --seed but keep one split, hence one vocabulary.
  f.data.seed = f.data_seed_given ? f.data_seed : f.train.seed;
  TrainOptions options = training_options(f);
  const std::unique_ptr<StagedModelDir> staged = stage_output(world, f);
  options.out_dir = staged ? staged->path() : f.out;
  const nlohmann::json subword = prepare_subwords(f);
  // Under mpirun rank 0 alone trains the SentencePiece models and sends them to every rank.
  if (world.size() > 1) f.data.subword.trainer = subword_trainer_on_root(world);
  const Dataset data = load_training_data(world, f);
  const Seq2SeqConfig config = model_config(world, f, data);
  Generator init(f.train.seed);
  Seq2Seq model(config, init);
  if (root) print_setup(world, f, data, model);
  if (!f.resume && root) save_description(staged->path(), f, data, config, subword);
  options.target_codec = data.codecs.target;
  for (const SentencePair& p : data.valid_text) options.valid_references.push_back(p.target);
  TrainHooks hooks = root ? progress_hooks(f, data) : TrainHooks{};  // rank 0 alone shows progress
  hooks.on_checkpoint = commit_staged(staged.get());
  hooks.stop = &stop;
  Trainer trainer(model, data.target_vocab, data.train, data.valid, std::move(options), std::move(hooks));
  trainer.distribute(world);
  if (f.resume) resume(trainer, f, root);
  trainer.run();
  finish(world, f, staged.get(), trainer, data, stop);
}

}  // namespace

void run_train(TrainFlags& f, const std::atomic<bool>* stop) {
  std::unique_ptr<Communicator> world;
  try {
    world = connect_world();
  } catch (const Error&) {
    if (launched_rank() > 0) throw CLI::RuntimeError(1);  // every rank fails alike: the first one says why
    throw;
  }
  try {
    train(*world, f, stop);
  } catch (const CollectiveError& e) {
    if (world->size() == 1) throw;
    // Every rank has it: rank 0 reports it and the others exit quietly, but
    // none before rank 0 has written it (the gather waits for every rank):
    // mpirun ends the job at the first non-zero exit, which could otherwise
    // kill rank 0 before it said why (tests/mpi/cli.sh saw it once).
    if (world->is_root()) {
      std::fflush(stdout);
      std::fprintf(stderr, "attend: error: %s\n", e.what());
      std::fflush(stderr);
    }
    const std::uint64_t reported = 1;
    world->all_gather(std::span(&reported, 1));
    throw CLI::RuntimeError(1);
  } catch (const CLI::Error&) {
    throw;
  } catch (const std::exception& e) {
    if (world->size() == 1) throw;
    // Only this rank knows of it, and the others may be waiting for it in a
    // collective call: say what happened and end the whole job.
    std::fprintf(stderr, "attend: error: rank %d of %d: %s\n", world->rank(), world->size(), e.what());
    world->abort(1);
  }
}

namespace {

// --subword, --vocab-size, --subword-sides and --spm-model*
void add_subword_flags(CLI::App& cmd, TrainFlags& f) {
  cmd.footer(
      "Subwords (SentencePiece): --subword unigram|bpe trains a model of --vocab-size pieces on the training side of\n"
      "the data, one for both languages (DIR/subword.model) or, with --subword-sides separate, one per side\n"
      "(DIR/source.model, DIR/target.model). --spm-model FILE uses a model made by spm_train for both sides;\n"
      "--spm-source-model and --spm-target-model one per side; they are copied into --out. The vocabularies hold\n"
      "the pieces the training text uses, --max-len counts pieces, and translate and eval read and write plain text\n"
      "(BLEU is scored on the decoded text). The .model files are SentencePiece's own: Python's sentencepiece reads them.\n"
      "  spm_train --input=text.txt --model_prefix=m --vocab_size=8000 --model_type=unigram\n"
      "  attend train --data pairs.tsv --spm-model m.model --out DIR");
  auto* subword = cmd.add_option("--subword", f.data.subword.type,
                                  "Subwords instead of words: train a SentencePiece model (unigram or bpe) on the "
                                  "training text and store it in --out (--max-len then counts pieces)")
                      ->check(CLI::IsMember({"unigram", "bpe"}));
  cmd.add_option("--vocab-size", f.data.subword.vocab_size, "With --subword: pieces in the SentencePiece model")
      ->check(check::integer(8, limits::kMaxVocabulary, true))
      ->needs(subword)
      ->capture_default_str();
  cmd.add_option("--subword-sides", f.subword_sides,
                  "With --subword: one model for both sides (joint) or one per side (separate)")
      ->check(CLI::IsMember({"joint", "separate"}))
      ->needs(subword)
      ->capture_default_str();
  cmd.add_option("--spm-model", f.data.subword.model,
                  "Subwords from an existing SentencePiece model (spm_train's .model) for both sides; copied into --out")
      ->check(CLI::ExistingFile);
  cmd.add_option("--spm-source-model", f.data.subword.source_model,
                  "Subwords from existing SentencePiece models, one per side (with --spm-target-model)")
      ->check(CLI::ExistingFile);
  cmd.add_option("--spm-target-model", f.data.subword.target_model, "The target side's model (with --spm-source-model)")
      ->check(CLI::ExistingFile);
}

// --attention, --embed, --hidden, --layers, --bidirectional and --dropout
void add_model_flags(CLI::App& cmd, TrainFlags& f) {
  cmd.add_option("--attention", f.attention, "none, additive (Bahdanau), dot (scaled, projected) or general (Luong)")
      ->check(CLI::IsMember({"none", "additive", "dot", "general"}))
      ->capture_default_str();
  cmd.add_option("--embed", f.embed, "Embedding size")->check(check::integer(1, limits::kMaxDimension, true))->capture_default_str();
  cmd.add_option("--hidden", f.hidden, "LSTM hidden size")->check(check::integer(1, limits::kMaxDimension, true))->capture_default_str();
  cmd.add_option("--layers", f.layers, "Encoder LSTM layers")->check(check::integer(1, limits::kMaxLayers, true))->capture_default_str();
  cmd.add_flag("--bidirectional,!--unidirectional", f.bidirectional, "Bidirectional encoder (the default), or not")
      ->capture_default_str();
  cmd.add_option("--dropout", f.dropout, "Dropout on embeddings, between layers and before the output")
      ->check(check::number(0.0, 0.95))
      ->capture_default_str();
}

// The loop: batches, epochs, limits, the optimizer and what validation does
void add_training_flags(CLI::App& cmd, TrainFlags& f) {
  cmd.add_option("--batch", f.train.batch, "Sentences per batch")->check(check::integer(1, limits::kMaxBatch, true))->capture_default_str();
  cmd.add_option("--epochs", f.train.epochs, "Passes over the training data")->check(check::integer(1, 1000000))->capture_default_str();
  cmd.add_option("--minutes", f.train.minutes, "Stop after this many minutes (0: no limit)")
      ->check(check::number(0.0, std::numeric_limits<double>::max()))->capture_default_str();
  cmd.add_option("--max-steps", f.train.max_steps, "Stop after this many steps (0: no limit)")
      ->check(check::integer(0, std::numeric_limits<std::int64_t>::max()))->capture_default_str();
  cmd.add_option("--lr", f.train.lr, "Learning rate (with --resume: replaces the checkpoint's)")
      ->check(check::number(0.0, std::numeric_limits<double>::max(), true))
      ->each([&f](const std::string&) { f.lr_given = true; })
      ->capture_default_str();
  cmd.add_option("--optimizer", f.optimizer, "adam, sgd or adadelta")
      ->check(CLI::IsMember({"adam", "sgd", "adadelta"}))
      ->capture_default_str();
  cmd.add_option("--clip", f.train.clip, "Clip the global gradient norm to this (0: off)")
      ->check(check::number(0.0, std::numeric_limits<double>::max()))->capture_default_str();
  cmd.add_option("--label-smoothing", f.train.label_smoothing, "Label smoothing")->check(check::number(0.0, 0.99));
  cmd.add_option("--teacher-forcing", f.train.teacher_forcing, "Probability of feeding the reference token")
      ->check(check::number(0.0, 1.0));
  cmd.add_option("--bleu-sentences", f.train.bleu_sentences, "Validation sentences translated for BLEU each epoch")
      ->check(check::integer(0, std::numeric_limits<std::int64_t>::max()))
      ->capture_default_str();
  cmd.add_option("--seed", f.train.seed, "Seed of the initial weights, the data split and order")
      ->check(check::seed())
      ->capture_default_str();
  cmd.add_option("--data-seed", f.data_seed,
                 "Seed of the train/validation split and the toy sentences (default: --seed); "
                 "models trained with other --seed and one --data-seed share their vocabularies")
      ->check(check::seed())
      ->each([&f](const std::string&) { f.data_seed_given = true; });
}

// Threads, where the model goes, and how the run starts
void add_run_flags(CLI::App& cmd, TrainFlags& f) {
  cmd.add_option("--threads", f.threads, "OpenBLAS threads")->check(check::threads())->capture_default_str();
  cmd.add_option("--out", f.out, "Directory for the model, checkpoints and the log")->check(check::out_directory())->capture_default_str();
  cmd.add_flag("--resume", f.resume, "Continue the run saved in --out (same data flags)");
  cmd.add_flag("--overwrite", f.overwrite,
                "Replace the model in --out (it stays whole until the new run's first model is saved)");
  cmd.add_flag("--detect-anomaly", f.train.detect_anomaly, "Name the first op that produces NaN or infinity (slow)");
}

}  // namespace

void add_train_flags(CLI::App& cmd, TrainFlags& f) {
  f.data.add_to(cmd);
  add_subword_flags(cmd, f);
  add_model_flags(cmd, f);
  add_training_flags(cmd, f);
  add_run_flags(cmd, f);
}

void add_train_command(CLI::App& app) {
  auto flags = std::make_shared<TrainFlags>();
  auto* cmd = app.add_subcommand("train", "Train a sequence-to-sequence model with attention");
  add_train_flags(*cmd, *flags);
  cmd->callback([flags] { run_train(*flags); });
}

}  // namespace attend::tools
