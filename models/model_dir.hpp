#pragma once
// A trained model on disk: one directory holding everything `attend translate`
// and `attend eval` need.
//   DIR/config.json        the model configuration (and how it was trained)
//   DIR/model.safetensors  the parameters of the best model (lowest validation loss)
//   DIR/source.vocab       one token per line, in id order
//   DIR/target.vocab
// Every file is written atomically (temporary file, fsync, rename): a crash
// during a save leaves the previous version whole.
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "models/seq2seq.hpp"
#include "models/tokenizer.hpp"
#include "models/vocabulary.hpp"

namespace attend {

struct LoadedModel {
  Seq2SeqConfig config;
  nlohmann::json info;  // the whole config.json
  Vocabulary source_vocab, target_vocab;
  TokenizerOptions tokenizer;
  std::unique_ptr<Seq2Seq> model;
};

// Writes config.json (config plus `extra` fields) and both vocabularies.
void save_model_description(const std::string& dir, const Seq2SeqConfig& config, const Vocabulary& source_vocab,
                            const Vocabulary& target_vocab, const TokenizerOptions& tokenizer,
                            const nlohmann::json& extra = nlohmann::json::object());
// Reads config.json, the vocabularies and `weights` (default DIR/model.safetensors).
LoadedModel load_model_dir(const std::string& dir, const std::string& weights = "model.safetensors");

std::string path_in(const std::string& dir, const std::string& name);

}  // namespace attend
