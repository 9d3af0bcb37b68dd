#include "models/model_dir.hpp"

#include <filesystem>

#include "core/file_io.hpp"
#include "layers/serialize.hpp"
#include "models/checkpoint.hpp"

namespace attend {

std::string path_in(const std::string& dir, const std::string& name) {
  return (std::filesystem::path(dir) / name).string();
}

namespace {
std::string vocab_text(const Vocabulary& v) {
  std::string text;
  for (const std::string& t : v.tokens()) text += t + "\n";
  return text;
}
Vocabulary read_vocab(const std::string& path) {
  std::vector<std::string> tokens = split_lines(read_file(path));
  try {
    return Vocabulary::from_tokens(std::move(tokens));
  } catch (const Error& e) {
    fail("{}: {}", path, e.what());
  }
}
}  // namespace

void save_model_description(const std::string& dir, const Seq2SeqConfig& config, const Vocabulary& source_vocab,
                            const Vocabulary& target_vocab, const TokenizerOptions& tokenizer,
                            const nlohmann::json& extra) {
  std::filesystem::create_directories(dir);
  nlohmann::json j = extra;
  j["model"] = config.to_json();
  j["tokenizer"] = {{"lowercase", tokenizer.lowercase}, {"split_elision", tokenizer.split_elision}};
  j["source_vocab"] = "source.vocab";
  j["target_vocab"] = "target.vocab";
  j["format"] = "attend-seq2seq-1";
  write_file_atomic(path_in(dir, "source.vocab"), vocab_text(source_vocab));
  write_file_atomic(path_in(dir, "target.vocab"), vocab_text(target_vocab));
  write_file_atomic(path_in(dir, "config.json"), j.dump(2) + "\n");
}

LoadedModel load_model_dir(const std::string& dir, const std::string& weights) {
  if (!std::filesystem::is_directory(dir)) fail("{}: not a model directory (it does not exist)", dir);
  LoadedModel m;
  const std::string config_path = path_in(dir, "config.json");
  try {
    m.info = nlohmann::json::parse(read_file(config_path));
    m.config = Seq2SeqConfig::from_json(m.info.at("model"));
    if (m.info.contains("tokenizer")) {
      m.tokenizer.lowercase = m.info["tokenizer"].value("lowercase", false);
      m.tokenizer.split_elision = m.info["tokenizer"].value("split_elision", true);
    }
  } catch (const nlohmann::json::exception& e) {
    fail("{}: {}", config_path, e.what());
  }
  m.source_vocab = read_vocab(path_in(dir, "source.vocab"));
  m.target_vocab = read_vocab(path_in(dir, "target.vocab"));
  if (m.source_vocab.size() != m.config.source_vocab || m.target_vocab.size() != m.config.target_vocab)
    fail("{}: the vocabularies ({} and {} tokens) do not match config.json ({} and {})", dir, m.source_vocab.size(),
         m.target_vocab.size(), m.config.source_vocab, m.config.target_vocab);
  Generator init(0);
  m.model = std::make_unique<Seq2Seq>(m.config, init);
  const std::string weights_path = path_in(dir, weights);
  nn::load(*m.model, weights_path);
  const std::string bad = first_non_finite_parameter(*m.model);
  if (!bad.empty())
    fail("{}: the weights are not finite ('{}' holds a NaN or infinity); refusing to use this model", weights_path, bad);
  m.model->eval();
  return m;
}

StagedModelDir::StagedModelDir(const std::string& final_dir, bool overwrite) {
  namespace fs = std::filesystem;
  fs::path p = fs::path(final_dir).lexically_normal();
  if (p.has_filename() == false && p.has_parent_path()) p = p.parent_path();  // "out/" -> "out"
  if (p.empty() || p.filename() == "." || p.filename() == "..")
    fail("--out {}: name a new directory for the model", final_dir);
  final_ = p.string();
  std::error_code ec;
  const fs::file_status st = fs::status(final_, ec);
  if (fs::exists(st)) {
    if (!fs::is_directory(st)) fail("--out {}: exists and is not a directory", final_);
    replaces_ = true;
    if (!overwrite && !fs::is_empty(final_, ec))
      fail("--out {}: the directory exists{}; pass --resume to continue its run, --overwrite to replace it, or "
           "another --out",
           final_, fs::exists(fs::path(final_) / "model.safetensors") ? " and holds a model" : "");
  }
  const fs::path parent = p.has_parent_path() ? p.parent_path() : fs::path(".");
  remove_stale_temporaries(parent.string(), p.filename().string());
  staging_ = temp_path_for(final_);
}

StagedModelDir::~StagedModelDir() {
  std::error_code ec;
  if (!committed_) std::filesystem::remove_all(staging_, ec);
}

void StagedModelDir::commit() {
  if (committed_) return;
  if (replaces_) {
    exchange_paths(staging_, final_);  // the commit point: staging_ now names the old directory
    committed_ = true;
    std::filesystem::remove_all(staging_);
  } else {
    rename_path(staging_, final_);
    committed_ = true;
  }
}

}  // namespace attend
