#pragma once
// SentencePiece subword models (Kudo and Richardson, 2018): text to pieces and
// back. A piece that starts a word carries the marker U+2581 ("▁"), so
// decoding is joining the pieces and turning each marker into a space:
//   "la voiture rouge" -> "▁la", "▁voiture", "▁rou", "ge" -> "la voiture rouge"
// The model is the .model file of the SentencePiece library (a protobuf), as
// spm_train writes it and Python's sentencepiece reads it. This header does not
// expose the library: subword.cpp is the only file that includes it.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace attend {

struct SubwordTrainOptions {
  std::string type = "unigram";  // unigram or bpe
  std::int64_t vocab_size = 8000;  // pieces, SentencePiece's <unk>, <s> and </s> included
  double character_coverage = 0.9995;  // characters rarer than the last 0.05% become <unk>
  std::int64_t max_sentences = 1000000;  // trained on at most this many (a seeded sample)
  std::uint64_t seed = 1;
};

// The marker SentencePiece puts before a piece that starts a word: U+2581.
inline constexpr std::string_view kWordMarker = "\xE2\x96\x81";

class SubwordModel {
 public:
  // Trains a model on the sentences (one thread, seeded: the same sentences and
  // options give the same model). Throws attend::Error if SentencePiece refuses,
  // e.g. a vocab_size larger than the text allows.
  static SubwordModel train(const std::vector<std::string>& sentences, const SubwordTrainOptions& options);
  // Reads a .model file; throws attend::Error naming `path` for a file that is
  // not a well-formed SentencePiece model (truncated, garbage, too large).
  static SubwordModel load(const std::string& path);
  // The same from the file's bytes; `name` is used in messages.
  static SubwordModel from_bytes(std::string bytes, const std::string& name);

  SubwordModel(SubwordModel&&) noexcept;
  SubwordModel& operator=(SubwordModel&&) noexcept;
  ~SubwordModel();

  // The .model file's bytes; save() writes them atomically.
  const std::string& bytes() const;
  void save(const std::string& path) const;

  std::int64_t size() const;  // pieces in the model
  // Pieces of the text; a character the model does not know gives "<unk>"
  // (attend's name for it, whatever the model calls its unknown piece).
  std::vector<std::string> encode(std::string_view text) const;
  // Text of the pieces (a piece the model does not have decodes as " ⁇ ").
  std::string decode(const std::vector<std::string>& pieces) const;

 private:
  struct Impl;
  explicit SubwordModel(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// What trains a model from sentences: SubwordModel::train, or under MPI one
// that trains on rank 0 only and sends the model to the other ranks
// (subword_trainer_on_root, models/train/distributed.hpp).
using SubwordTrainer = std::function<SubwordModel(const std::vector<std::string>&, const SubwordTrainOptions&)>;

// Whether the piece starts a word (begins with U+2581).
bool starts_word(std::string_view piece);

}  // namespace attend
