// attend train: the data and the model, prepared from the flags (train_command.hpp).
#include <filesystem>

#include <fmt/format.h>

#include "core/io/limits.hpp"
#include "models/train/checkpoint.hpp"
#include "tools/cli/commands.hpp"
#include "tools/cli/train_command.hpp"

namespace attend::tools {

namespace {

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

OptimizerKind optimizer_kind(const std::string& name) {
  for (OptimizerKind kind : {OptimizerKind::Adam, OptimizerKind::SGD, OptimizerKind::Adadelta})
    if (name == optimizer_name(kind)) return kind;
  fail("--optimizer: unknown optimizer '{}': choose adam, sgd or adadelta", name);
}

}  // namespace

TrainOptions training_options(const TrainFlags& f) {
  TrainOptions o = f.train;
  o.optimizer = optimizer_kind(f.optimizer);
  return o;
}

nlohmann::json prepare_subwords(TrainFlags& f) {
  apply_subword_flags(f);
  const nlohmann::json subword = f.data.subword.enabled() ? subword_record(f) : nlohmann::json();
  if (f.resume) use_saved_subword_models(f);
  return subword;
}

Dataset load_training_data(Communicator& world, const TrainFlags& f) {
  Dataset data = f.data.load();
  if (world.size() > 1)
    check_same_on_every_rank(world, fingerprint(data), "training data (every host needs the same files and flags)");
  return data;
}

Seq2SeqConfig model_config(Communicator& world, const TrainFlags& f, const Dataset& data) {
  if (f.resume) return resumed_config(world, f, data);
  Seq2SeqConfig config;
  config.source_vocab = data.source_vocab.size();
  config.target_vocab = data.target_vocab.size();
  config.embed = f.embed;
  config.hidden = f.hidden;
  config.layers = f.layers;
  config.bidirectional = f.bidirectional;
  config.dropout = f.dropout;
  config.attention = parse_attention(f.attention);
  config.validate();
  return config;
}

void print_setup(const Communicator& world, const TrainFlags& f, const Dataset& data, const Seq2Seq& model) {
  const Seq2SeqConfig& config = model.config();
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

void save_description(const std::string& dir, const TrainFlags& f, const Dataset& data, const Seq2SeqConfig& config,
                      const nlohmann::json& subword) {
  nlohmann::json extra = {{"training",
                           {{"data", f.data.describe()}, {"optimizer", f.optimizer}, {"lr", f.train.lr},
                            {"batch", f.train.batch}, {"clip", f.train.clip}, {"seed", f.train.seed},
                            {"label_smoothing", f.train.label_smoothing}}}};
  if (!subword.is_null()) extra["subword"] = subword;
  save_model_description(dir, config, data.source_vocab, data.target_vocab, data.codecs, extra);
}

}  // namespace attend::tools
