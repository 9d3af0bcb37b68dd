#pragma once
// A trained model on disk: one directory holding everything `attend translate`
// and `attend eval` need.
//   DIR/config.json        the model configuration (and how it was trained)
//   DIR/model.safetensors  the parameters of the best model (lowest validation loss);
//                          an int8 model's (config.json "weights": "int8", made by
//                          attend quantize) in the layout of models/quantize/quantize.hpp
//   DIR/source.vocab       one token per line, in id order
//   DIR/target.vocab
//   DIR/subword.model      with subwords: the SentencePiece model of both sides,
//                          or DIR/source.model and DIR/target.model, one per side
// Every file is written atomically (temporary file, fsync, rename): a crash
// during a save leaves the previous version whole.
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "models/seq2seq.hpp"
#include "models/data/text_codec.hpp"
#include "models/data/tokenizer.hpp"
#include "models/data/vocabulary.hpp"

namespace attend {

struct LoadedModel {
  Seq2SeqConfig config;
  nlohmann::json info;  // the whole config.json
  Vocabulary source_vocab, target_vocab;
  TokenizerOptions tokenizer;
  TextCodecs codecs;  // text <-> tokens: words with `tokenizer`, or SentencePiece
  bool int8 = false;  // config.json "weights": "int8" (absent or "float32": a float model)
  std::unique_ptr<Seq2Seq> model;
};

// Writes config.json (config plus `extra` fields) and both vocabularies.
void save_model_description(const std::string& dir, const Seq2SeqConfig& config, const Vocabulary& source_vocab,
                            const Vocabulary& target_vocab, const TokenizerOptions& tokenizer,
                            const nlohmann::json& extra = nlohmann::json::object());
// The same, and for subword codecs their SentencePiece models (subword.model
// when both sides share one, else source.model and target.model), recorded in
// config.json under "subword". Words codecs give the words model above.
void save_model_description(const std::string& dir, const Seq2SeqConfig& config, const Vocabulary& source_vocab,
                            const Vocabulary& target_vocab, const TextCodecs& codecs,
                            const nlohmann::json& extra = nlohmann::json::object());
// Reads config.json, the vocabularies and `weights` (default DIR/model.safetensors).
LoadedModel load_model_dir(const std::string& dir, const std::string& weights = "model.safetensors");

std::string path_in(const std::string& dir, const std::string& name);

// The comparison that averaging (models/train/average.cpp) and ensembles share.
// How `other` writes one side's text differently from `first`, as a message
// ("" when alike), the first difference found: the vocabulary's size, its token
// at index i, then the SentencePiece model (or words against subwords).
// `first_name` names the first model in the message ("the first input").
enum class ModelSide { Source, Target };
std::string side_difference(ModelSide side, const LoadedModel& first, const LoadedModel& other,
                            std::string_view first_name);
// Why `other` cannot decode in an ensemble with `first` ("" when it can): its
// weights are of another kind (int8 against float32), its target side differs
// (side_difference), or its source side, or the tokenizer options that read the source.
std::string ensemble_difference(const LoadedModel& first, const LoadedModel& other, std::string_view first_name);
// Throws Error unless the models can decode together as one ensemble (the
// ensemble decodes with the first model's vocabularies and codecs): 1 to
// limits::kMaxEnsemble models, each with no ensemble_difference from the
// first. names[i] names models[i] in the message, which says the first difference:
//   "ensemble: B: target.vocab line 6 (token 5) is 'chien', A's is 'chat'; ..."
void check_ensemble(std::span<const LoadedModel> models, std::span<const std::string> names);

// A model directory built in a fresh place beside its final one
// (DIR.tmp-PID-N) and moved there by one rename once it is worth keeping, so
// that no one ever sees a half-made model directory, and an existing model
// stays whole until its replacement loads. Without overwrite, an existing
// non-empty DIR is refused. Stale staging directories of killed runs are removed.
class StagedModelDir {
 public:
  StagedModelDir(const std::string& final_dir, bool overwrite);
  ~StagedModelDir();  // removes the staging directory unless committed
  StagedModelDir(const StagedModelDir&) = delete;
  StagedModelDir& operator=(const StagedModelDir&) = delete;

  const std::string& final_dir() const { return final_; }
  // Where to write: the staging directory until commit(), then the final one.
  const std::string& path() const { return committed_ ? final_ : staging_; }
  bool committed() const { return committed_; }
  // Whether commit() replaces an existing directory.
  bool replaces() const { return replaces_; }
  // Puts the staged directory in place (swapping it with the old one, which is then deleted).
  void commit();

 private:
  std::string final_, staging_;
  bool replaces_ = false, committed_ = false;
};

}  // namespace attend
