#include "models/model_dir.hpp"

#include <filesystem>

#include "core/file_io.hpp"
#include "layers/serialize.hpp"

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
  nn::load(*m.model, path_in(dir, weights));
  m.model->eval();
  return m;
}

}  // namespace attend
