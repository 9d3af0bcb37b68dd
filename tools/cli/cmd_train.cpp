// attend train: trains a Seq2Seq model on parallel text, the toy language or
// gettext catalogs, with validation each epoch, atomic checkpoints, Ctrl-C that
// saves and exits, and --resume. Under `mpirun -np N` it trains data-parallel
// (models/train/distributed.hpp): rank 0 prints and writes, every rank computes.
//
// Signals: the first SIGINT or SIGTERM asks the trainer to stop after the
// current step, save a checkpoint and exit (status 128 + the signal, as a
// shell reports a signal); a second one ends the process at once, by the
// signal's default action (the committed checkpoint is whole either way).
#include <atomic>
#include <csignal>
#include <filesystem>
#include <limits>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/kernels/blas.hpp"
#include "core/io/limits.hpp"
#include "models/train/checkpoint.hpp"
#include "models/train/distributed.hpp"
#include "models/model_dir.hpp"
#include "models/train/trainer.hpp"
#include "tools/cli/checks.hpp"
#include "tools/cli/commands.hpp"
#include "tools/cli/data_options.hpp"
#include "tools/cli/terminal.hpp"

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
  int threads = 1;
  std::string out = "model";
  bool resume = false;
  bool overwrite = false;
  CLI::Option* lr_option = nullptr;  // given explicitly?
  std::string subword_sides = "joint";
  std::uint64_t data_seed = 1;
  CLI::Option* data_seed_option = nullptr;  // given explicitly?
};

// --subword and --spm-model* as data.subword, and what config.json records of them.
void apply_subword_flags(TrainFlags& f) {
  SubwordSetup& s = f.data.subword;
  s.separate = f.subword_sides == "separate";
  const bool external = !s.model.empty() || !s.source_model.empty() || !s.target_model.empty();
  if (!s.type.empty() && external) fail("--subword trains a SentencePiece model; --spm-model* use existing ones: give one");
  if (!s.model.empty() && (!s.source_model.empty() || !s.target_model.empty()))
    fail("--spm-model (both sides) and --spm-source-model/--spm-target-model (one per side) exclude each other");
  if (s.source_model.empty() != s.target_model.empty())
    fail("--spm-source-model and --spm-target-model go together (or use --spm-model for both sides)");
}

nlohmann::json subword_record(const TrainFlags& f) {
  const SubwordSetup& s = f.data.subword;
  if (!s.type.empty())
    return {{"type", s.type}, {"vocab_size", s.vocab_size}, {"sides", s.separate ? "separate" : "joint"},
            {"trained_by", "attend train"}};
  if (!s.model.empty()) return {{"sides", "joint"}, {"trained_by", "spm_train (--spm-model)"}, {"given", s.model}};
  return {{"sides", "separate"}, {"trained_by", "spm_train (--spm-source-model, --spm-target-model)"},
          {"given", {s.source_model, s.target_model}}};
}

// --resume of a subword run reads the SentencePiece models saved in --out
// rather than training them again.
void use_saved_subword_models(TrainFlags& f) {
  const std::string config_path = path_in(f.out, "config.json");
  if (!std::filesystem::exists(config_path)) return;  // require_checkpoint says what is missing
  nlohmann::json saved;
  try {
    saved = nlohmann::json::parse(limits::read_bounded_file(config_path, "--resume"));
  } catch (const nlohmann::json::exception&) {
    return;  // load_model_dir names the problem
  }
  const bool saved_subword = saved.is_object() && saved.contains("subword");
  if (saved_subword != f.data.subword.enabled())
    fail("--resume: the run in {} was trained with {}; pass the same data flags", f.out,
         saved_subword ? "subwords (--subword or --spm-model)" : "words (no --subword)");
  if (!saved_subword) return;
  LoadedModel dir = load_model_dir(f.out, "checkpoint/last.safetensors");
  const auto& j = dir.info["subword"];
  SubwordSetup s;
  s.source_model = path_in(f.out, j["source_model"].get<std::string>());
  s.target_model = path_in(f.out, j["target_model"].get<std::string>());
  if (s.source_model == s.target_model) {
    s.model = s.source_model;
    s.source_model.clear();
    s.target_model.clear();
  }
  f.data.subword = s;
}

std::string number_of(double tokens_per_second) {
  return tokens_per_second >= 1000 ? fmt::format("{:.1f}k", tokens_per_second / 1000) : fmt::format("{:.0f}", tokens_per_second);
}

// A hash of the data every rank trained on: under MPI every host must have the same.
std::uint64_t fingerprint(const Dataset& data) {
  std::uint64_t h = 1469598103934665603ULL;  // FNV-1a over the ids and the sizes
  auto mix = [&](std::uint64_t v) { h = (h ^ v) * 1099511628211ULL; };
  for (const auto* part : {&data.train, &data.valid}) {
    mix(part->size());
    for (const EncodedPair& pair : *part) {
      mix(pair.source.size());
      for (std::int64_t id : pair.source) mix(static_cast<std::uint64_t>(id));
      mix(pair.target.size());
      for (std::int64_t id : pair.target) mix(static_cast<std::uint64_t>(id));
    }
  }
  mix(static_cast<std::uint64_t>(data.source_vocab.size()));
  mix(static_cast<std::uint64_t>(data.target_vocab.size()));
  return h;
}

// The saved run's configuration, read by rank 0 (the other hosts may not have
// the directory) and sent to every rank.
Seq2SeqConfig resumed_config(Communicator& world, const TrainFlags& f, const Dataset& data) {
  std::string config_json, failure;
  if (world.is_root()) {
    try {
      require_checkpoint(f.out);
      LoadedModel saved = load_model_dir(f.out, "checkpoint/last.safetensors");
      if (saved.source_vocab.tokens() != data.source_vocab.tokens() ||
          saved.target_vocab.tokens() != data.target_vocab.tokens())
        fail("--resume: the data gives other vocabularies than the run in {} was trained with; pass the same data flags",
             f.out);
      config_json = saved.config.to_json().dump();
    } catch (const Error& e) {
      if (world.size() == 1) throw;
      failure = e.what();
    }
  }
  if (world.size() > 1) {
    agree_on_failure(world, !failure.empty(), failure);
    broadcast_string(world, config_json);
  }
  return Seq2SeqConfig::from_json(nlohmann::json::parse(config_json));
}

void train(Communicator& world, TrainFlags& f) {
  // From the start, so that a signal during data loading is not lost either: training then stops at once.
  InterruptHandlers handlers;
  const bool root = world.is_root();  // prints, writes the model directory
  blas::set_num_threads(f.threads);
  // The split follows --seed unless --data-seed is given: models for an
  // ensemble differ in --seed but keep one split, hence one vocabulary.
  f.data.seed = f.data_seed_option != nullptr && f.data_seed_option->count() > 0 ? f.data_seed : f.train.seed;
  if (f.resume && f.overwrite) fail("--resume and --overwrite exclude each other: continue the run in {}, or replace it", f.out);
  // A new run is built beside --out and moved there at its first checkpoint
  // (StagedModelDir), by rank 0: the other ranks write nothing.
  std::unique_ptr<StagedModelDir> staged;
  std::string failure;
  if (!f.resume && root) {
    try {
      staged = std::make_unique<StagedModelDir>(f.out, f.overwrite);
    } catch (const Error& e) {
      if (world.size() == 1) throw;
      failure = e.what();
    }
  }
  if (world.size() > 1) agree_on_failure(world, !failure.empty(), failure);
  f.train.out_dir = staged ? staged->path() : f.out;
  apply_subword_flags(f);
  const nlohmann::json subword = f.data.subword.enabled() ? subword_record(f) : nlohmann::json();
  if (f.resume) use_saved_subword_models(f);
  Dataset data = f.data.load();
  if (world.size() > 1)
    check_same_on_every_rank(world, fingerprint(data), "training data (every host needs the same files and flags)");
  Seq2SeqConfig config;
  if (f.resume) {
    config = resumed_config(world, f, data);
  } else {
    config.source_vocab = data.source_vocab.size();
    config.target_vocab = data.target_vocab.size();
    config.embed = f.embed;
    config.hidden = f.hidden;
    config.layers = f.layers;
    config.bidirectional = f.bidirectional;
    config.dropout = f.dropout;
    config.attention = parse_attention(f.attention);
    config.validate();
  }
  Generator init(f.train.seed);
  Seq2Seq model(config, init);
  if (root) {
    fmt::print("data: {}: {} training and {} validation pairs ({} dropped by length); vocabularies {} and {}\n",
               f.data.describe(), data.train.size(), data.valid.size(), data.dropped_by_length, data.source_vocab.size(),
               data.target_vocab.size());
    if (data.codecs.source.is_subword())
      fmt::print("subwords: SentencePiece, {} pieces (source) and {} (target){}\n", data.codecs.source.subword()->size(),
                 data.codecs.target.subword()->size(),
                 data.codecs.source.subword_ptr() == data.codecs.target.subword_ptr() ? ", one joint model" : "");
    fmt::print("unknown tokens in validation: source {:.2f}% ({} of {}), target {:.2f}% ({} of {})\n",
               100 * data.valid_source_unknown.rate(), data.valid_source_unknown.unknown, data.valid_source_unknown.tokens,
               100 * data.valid_target_unknown.rate(), data.valid_target_unknown.unknown, data.valid_target_unknown.tokens);
    fmt::print("model: attention {}, embed {}, hidden {}, layers {}{}, dropout {}; {} parameters; {} threads\n",
               attention_name(config.attention), config.embed, config.hidden, config.layers,
               config.bidirectional ? " (bidirectional)" : "", config.dropout, model.num_parameters(), f.threads);
    if (world.size() > 1)
      fmt::print("data-parallel: {} processes, batch {} split among them (rank 0 writes {})\n", world.size(),
                 f.train.batch, f.out);
  }
  if (!f.resume && root) {
    nlohmann::json extra = {{"training",
                             {{"data", f.data.describe()}, {"optimizer", f.train.optimizer}, {"lr", f.train.lr},
                              {"batch", f.train.batch}, {"clip", f.train.clip}, {"seed", f.train.seed},
                              {"label_smoothing", f.train.label_smoothing}}}};
    if (!subword.is_null()) extra["subword"] = subword;
    save_model_description(staged->path(), config, data.source_vocab, data.target_vocab, data.codecs, extra);
  }
  Trainer trainer(model, data.target_vocab, data.train, data.valid, f.train);
  trainer.target_codec = data.codecs.target;
  for (const SentencePair& p : data.valid_text) trainer.valid_references.push_back(p.target);
  trainer.distribute(world);
  if (f.resume) {
    trainer.resume();
    if (root) fmt::print("resuming {} at epoch {}, step {}\n", f.out, trainer.epoch() + 1, trainer.global_step());
    // An explicit --lr overrides the checkpoint's (as setting a PyTorch param group's lr after loading would);
    // without it the run keeps the checkpoint's. The new lr is saved with the next checkpoint. Every rank
    // holds the same optimizer state, so every rank applies it alike.
    const double saved_lr = trainer.optimizer().lr();
    if (f.lr_option != nullptr && f.lr_option->count() > 0 && f.train.lr != saved_lr) {
      trainer.optimizer().set_lr(f.train.lr);
      if (root) fmt::print("lr: {} (--lr overrides the checkpoint's {})\n", f.train.lr, saved_lr);
    }
  }
  // Until the staged directory is in place, checkpoints go there; it moves to --out at the first
  // checkpoint, or, when it replaces a model, at the first checkpoint that has a model to load.
  trainer.on_checkpoint = [&] {
    if (!staged || staged->committed()) return;
    if (staged->replaces() && !std::filesystem::exists(path_in(staged->path(), "model.safetensors"))) return;
    staged->commit();
    trainer.set_out_dir(staged->final_dir());
  };
  const bool terminal = is_terminal(stdout);
  std::unique_ptr<ProgressBar> bar;
  double recent_tokens_per_second = 0;
  trainer.on_step = [&](const StepReport& r) {
    if (!bar || r.step == 1)
      bar = std::make_unique<ProgressBar>(fmt::format("epoch {}/{}", r.epoch, f.train.epochs), r.steps_in_epoch, terminal);
    recent_tokens_per_second =
        recent_tokens_per_second == 0 ? r.tokens_per_second : 0.9 * recent_tokens_per_second + 0.1 * r.tokens_per_second;
    bar->update(r.step, fmt::format("loss {:.3f}  {} tok/s", r.loss, number_of(recent_tokens_per_second)));
  };
  // A value the epoch does not have is "-": no training loss without a step (an epoch that
  // --max-steps or --minutes ended before it began), no validation without validation pairs,
  // no BLEU with --bleu-sentences 0.
  const bool validated = !data.valid.empty(), scored = validated && f.train.bleu_sentences > 0;
  auto value = [](bool has, double v, int digits) { return has ? fmt::format("{:.{}f}", v, digits) : std::string("-"); };
  trainer.on_epoch = [&](const EpochReport& r) {
    const std::string line = fmt::format("train loss {}  valid loss {}  ppl {}  BLEU {}{}{}", value(r.steps > 0, r.train_loss, 4),
                                         value(validated, r.valid_loss, 4), value(validated, r.valid_perplexity, 2),
                                         value(scored, r.valid_bleu, 2), r.best ? "  (best, saved)" : "",
                                         r.complete ? "" : "  (time is up)");
    if (bar) bar->finish(line);
    else fmt::print("epoch {}: {}\n", r.epoch, line);
    bar.reset();
  };
  if (!root) {  // rank 0 alone shows progress
    trainer.on_step = nullptr;
    trainer.on_epoch = nullptr;
  }
  trainer.stop = &interrupted;
  trainer.run();
  bool stopped = interrupted;
  if (world.size() > 1) {  // the signal may have reached one rank only; they all stopped
    double any = stopped ? 1 : 0;
    world.sum(std::span<double>(&any, 1));
    stopped = any > 0;
  }
  // 128 + the signal, as a shell reports one; 130 (SIGINT's) on a rank that stopped for another's.
  const int stop_status = 128 + (interrupt_signal.load() != 0 ? interrupt_signal.load() : SIGINT);
  if (!root) {
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
  // The best epoch is the one the trainer saved (validation loss, or training loss without validation data).
  const auto& h = trainer.history();
  auto best = std::find_if(h.rbegin(), h.rend(), [](const EpochReport& r) { return r.best; });
  if (best != h.rend())
    fmt::print("best: epoch {} (valid loss {}, BLEU {}); model in {}/model.safetensors, log in {}/train_log.csv\n",
               best->epoch, value(validated, best->valid_loss, 4), value(scored, best->valid_bleu, 2), f.out, f.out);
}

void run_train(TrainFlags& f) {
  std::unique_ptr<Communicator> world;
  try {
    world = connect_world();
  } catch (const Error&) {
    if (launched_rank() > 0) throw CLI::RuntimeError(1);  // every rank fails alike: the first one says why
    throw;
  }
  try {
    train(*world, f);
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

}  // namespace

void add_train_command(CLI::App& app) {
  auto flags = std::make_shared<TrainFlags>();
  auto* cmd = app.add_subcommand("train", "Train a sequence-to-sequence model with attention");
  flags->data.add_to(*cmd);
  TrainFlags& f = *flags;
  cmd->footer(
      "Subwords (SentencePiece): --subword unigram|bpe trains a model of --vocab-size pieces on the training side of\n"
      "the data, one for both languages (DIR/subword.model) or, with --subword-sides separate, one per side\n"
      "(DIR/source.model, DIR/target.model). --spm-model FILE uses a model made by spm_train for both sides;\n"
      "--spm-source-model and --spm-target-model one per side; they are copied into --out. The vocabularies hold\n"
      "the pieces the training text uses, --max-len counts pieces, and translate and eval read and write plain text\n"
      "(BLEU is scored on the decoded text). The .model files are SentencePiece's own: Python's sentencepiece reads them.\n"
      "  spm_train --input=text.txt --model_prefix=m --vocab_size=8000 --model_type=unigram\n"
      "  attend train --data pairs.tsv --spm-model m.model --out DIR");
  auto* subword = cmd->add_option("--subword", f.data.subword.type,
                                  "Subwords instead of words: train a SentencePiece model (unigram or bpe) on the "
                                  "training text and store it in --out (--max-len then counts pieces)")
                      ->check(CLI::IsMember({"unigram", "bpe"}));
  cmd->add_option("--vocab-size", f.data.subword.vocab_size, "With --subword: pieces in the SentencePiece model")
      ->check(check::integer(8, limits::kMaxVocabulary, true))
      ->needs(subword)
      ->capture_default_str();
  cmd->add_option("--subword-sides", f.subword_sides,
                  "With --subword: one model for both sides (joint) or one per side (separate)")
      ->check(CLI::IsMember({"joint", "separate"}))
      ->needs(subword)
      ->capture_default_str();
  cmd->add_option("--spm-model", f.data.subword.model,
                  "Subwords from an existing SentencePiece model (spm_train's .model) for both sides; copied into --out")
      ->check(CLI::ExistingFile);
  cmd->add_option("--spm-source-model", f.data.subword.source_model,
                  "Subwords from existing SentencePiece models, one per side (with --spm-target-model)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--spm-target-model", f.data.subword.target_model, "The target side's model (with --spm-source-model)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--attention", f.attention, "none, additive (Bahdanau), dot (scaled, projected) or general (Luong)")
      ->check(CLI::IsMember({"none", "additive", "dot", "general"}))
      ->capture_default_str();
  cmd->add_option("--embed", f.embed, "Embedding size")->check(check::integer(1, limits::kMaxDimension, true))->capture_default_str();
  cmd->add_option("--hidden", f.hidden, "LSTM hidden size")->check(check::integer(1, limits::kMaxDimension, true))->capture_default_str();
  cmd->add_option("--layers", f.layers, "Encoder LSTM layers")->check(check::integer(1, limits::kMaxLayers, true))->capture_default_str();
  cmd->add_flag("--bidirectional,!--unidirectional", f.bidirectional, "Bidirectional encoder (the default), or not")
      ->capture_default_str();
  cmd->add_option("--dropout", f.dropout, "Dropout on embeddings, between layers and before the output")
      ->check(check::number(0.0, 0.95))
      ->capture_default_str();
  cmd->add_option("--batch", f.train.batch, "Sentences per batch")->check(check::integer(1, limits::kMaxBatch, true))->capture_default_str();
  cmd->add_option("--epochs", f.train.epochs, "Passes over the training data")->check(check::integer(1, 1000000))->capture_default_str();
  cmd->add_option("--minutes", f.train.minutes, "Stop after this many minutes (0: no limit)")
      ->check(check::number(0.0, std::numeric_limits<double>::max()))->capture_default_str();
  cmd->add_option("--max-steps", f.train.max_steps, "Stop after this many steps (0: no limit)")
      ->check(check::integer(0, std::numeric_limits<std::int64_t>::max()))->capture_default_str();
  f.lr_option = cmd->add_option("--lr", f.train.lr, "Learning rate (with --resume: replaces the checkpoint's)")
                    ->check(check::number(0.0, std::numeric_limits<double>::max(), true))
                    ->capture_default_str();
  cmd->add_option("--optimizer", f.train.optimizer, "adam, sgd or adadelta")
      ->check(CLI::IsMember({"adam", "sgd", "adadelta"}))
      ->capture_default_str();
  cmd->add_option("--clip", f.train.clip, "Clip the global gradient norm to this (0: off)")
      ->check(check::number(0.0, std::numeric_limits<double>::max()))->capture_default_str();
  cmd->add_option("--label-smoothing", f.train.label_smoothing, "Label smoothing")->check(check::number(0.0, 0.99));
  cmd->add_option("--teacher-forcing", f.train.teacher_forcing, "Probability of feeding the reference token")
      ->check(check::number(0.0, 1.0));
  cmd->add_option("--bleu-sentences", f.train.bleu_sentences, "Validation sentences translated for BLEU each epoch")
      ->check(check::integer(0, std::numeric_limits<std::int64_t>::max()))
      ->capture_default_str();
  cmd->add_option("--seed", f.train.seed, "Seed of the initial weights, the data split and order")
      ->check(check::seed())
      ->capture_default_str();
  f.data_seed_option = cmd->add_option("--data-seed", f.data_seed,
                                       "Seed of the train/validation split and the toy sentences (default: --seed); "
                                       "models trained with other --seed and one --data-seed share their vocabularies")
                           ->check(check::seed());
  cmd->add_option("--threads", f.threads, "OpenBLAS threads")->check(check::threads())->capture_default_str();
  cmd->add_option("--out", f.out, "Directory for the model, checkpoints and the log")->check(check::out_directory())->capture_default_str();
  cmd->add_flag("--resume", f.resume, "Continue the run saved in --out (same data flags)");
  cmd->add_flag("--overwrite", f.overwrite,
                "Replace the model in --out (it stays whole until the new run's first model is saved)");
  cmd->add_flag("--detect-anomaly", f.train.detect_anomaly, "Name the first op that produces NaN or infinity (slow)");
  cmd->callback([flags] { run_train(*flags); });
}

}  // namespace attend::tools
