#include "models/data/subword.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <mutex>
#include <unordered_map>

#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include "core/error.hpp"
#include "core/io/file_io.hpp"
#include "core/io/limits.hpp"
#include "models/data/tokenizer.hpp"

namespace attend {

namespace {

// A .model file above this is refused before it is parsed (an 8000-piece model
// is about 400 KB; the largest in common use, 250k pieces, about 5 MB).
constexpr std::uint64_t kMaxModelBytes = std::uint64_t{64} << 20;
constexpr std::int64_t kMaxPieces = 1 << 20;
constexpr std::size_t kMaxPieceBytes = 1024;

// ---- the protobuf wire format, checked before SentencePiece sees the bytes ----
// SentencePiece trusts two parts of a model: the piece list, and the normalizer's
// precompiled character map (a double-array trie it walks without bounds
// checks). So every field is checked for being well-formed, every piece for being
// short, valid UTF-8 without control characters, every score finite, and each character map must be
// one that SentencePiece itself makes (see known_charsmaps): a hostile file gives
// an error, never an out-of-bounds read.
//   ModelProto: 1 pieces (repeated message: 1 piece string, 2 score, 3 type),
//   2 trainer_spec, 3 normalizer_spec, 4 self_test_data, 5 denormalizer_spec.
//   NormalizerSpec: 1 name, 2 precompiled_charsmap (bytes), 3..6 flags and rules.
struct Wire {
  std::string_view data;
  std::size_t pos = 0;
  const std::string& name;
  std::uint64_t type = 0;  // the wire type of the last field read

  [[noreturn]] void bad(const char* what) const {
    fail("{}: not a SentencePiece model ({} at byte {})", name, what, pos);
  }
  bool done() const { return pos >= data.size(); }
  std::uint64_t varint() {
    std::uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (done()) bad("truncated number");
      const auto byte = static_cast<unsigned char>(data[pos++]);
      v |= static_cast<std::uint64_t>(byte & 0x7F) << shift;
      if ((byte & 0x80) == 0) return v;
    }
    bad("overlong number");
  }
  // The next field: its number, and for a length-delimited one its bytes.
  std::uint64_t field(std::string_view& bytes) {
    const std::uint64_t key = varint();
    const std::uint64_t number = key >> 3;
    type = key & 7;
    bytes = {};
    if (number == 0) bad("field number 0");
    switch (key & 7) {
      case 0: varint(); break;
      case 1: skip(8); break;
      case 5:
        skip(4);
        bytes = data.substr(pos - 4, 4);
        break;
      case 2: {
        const std::uint64_t n = varint();
        if (n > data.size() - pos) bad("field longer than the file");
        bytes = data.substr(pos, static_cast<std::size_t>(n));
        pos += static_cast<std::size_t>(n);
        break;
      }
      default: bad("unsupported wire type");
    }
    return number;
  }
  void skip(std::size_t n) {
    if (n > data.size() - pos) bad("truncated field");
    pos += n;
  }
};

std::string charsmap_of(std::string_view spec, const std::string& name) {
  Wire w{spec, 0, name};
  std::string charsmap;
  while (!w.done()) {
    std::string_view bytes;
    if (w.field(bytes) == 2 && w.type == 2) charsmap = std::string(bytes);
  }
  return charsmap;
}

// The character maps SentencePiece's built-in normalization rules compile to,
// taken from the library itself by training a tiny model with each rule.
const std::vector<std::string>& known_charsmaps();

void check_model_bytes(const std::string& bytes, const std::string& name) {
  if (bytes.empty()) fail("{}: not a SentencePiece model (the file is empty)", name);
  if (bytes.size() > kMaxModelBytes)
    fail("{}: not a SentencePiece model (it has {} bytes; attend reads models of at most {})", name, bytes.size(),
         limits::bytes_text(kMaxModelBytes));
  Wire w{bytes, 0, name};
  std::int64_t pieces = 0;
  while (!w.done()) {
    std::string_view sub;
    const std::uint64_t number = w.field(sub);
    if (w.type != 2) continue;  // every field this checks is length-delimited; others are skipped as protobuf does
    if (number == 1) {
      if (++pieces > kMaxPieces) w.bad("more than 1048576 pieces");
      Wire p{sub, 0, name};
      while (!p.done()) {
        std::string_view piece;
        const std::uint64_t piece_field = p.field(piece);
        if (piece_field == 2 && p.type == 5) {  // the score, a float: NaN would unsettle sorting by it
          float score = 0;
          std::memcpy(&score, piece.data(), 4);
          if (!std::isfinite(score)) w.bad("a piece whose score is not finite");
          continue;
        }
        if (piece_field != 1 || p.type != 2) continue;
        if (piece.empty() || piece.size() > kMaxPieceBytes) w.bad("a piece that is empty or longer than 1024 bytes");
        if (!valid_utf8(piece)) w.bad("a piece that is not valid UTF-8");
        for (char c : piece)
          if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F) w.bad("a piece with a control character");
      }
    } else if (number == 3 || number == 5) {
      const std::string charsmap = charsmap_of(sub, name);
      if (charsmap.empty()) continue;
      const auto& known = known_charsmaps();
      if (std::find(known.begin(), known.end(), charsmap) == known.end())
        w.bad("a normalization rule that is not one of SentencePiece's built-in ones");
    }
  }
  if (pieces == 0) fail("{}: not a SentencePiece model (it has no pieces)", name);
}

class SentenceList : public sentencepiece::SentenceIterator {
 public:
  explicit SentenceList(const std::vector<std::string>& sentences) : sentences_(sentences) {}
  bool done() const override { return i_ >= sentences_.size(); }
  void Next() override { ++i_; }
  const std::string& value() const override { return sentences_[i_]; }
  sentencepiece::util::Status status() const override { return {}; }

 private:
  const std::vector<std::string>& sentences_;
  std::size_t i_ = 0;
};

// SentencePiece's training keeps global state (its seed): one training at a time.
std::mutex training_mutex;

std::string train_bytes(const std::vector<std::string>& sentences, const SubwordTrainOptions& o,
                        const char* normalization = "nmt_nfkc") {
  const std::unordered_map<std::string, std::string> args = {
      {"model_type", o.type},
      {"vocab_size", std::to_string(o.vocab_size)},
      {"character_coverage", fmt::format("{}", o.character_coverage)},
      {"input_sentence_size", std::to_string(o.max_sentences)},
      {"shuffle_input_sentence", "true"},
      {"num_threads", "1"},
      {"normalization_rule_name", normalization},
      {"minloglevel", "2"},  // errors only: the progress log would flood the terminal
  };
  SentenceList list(sentences);
  std::string bytes;
  std::lock_guard<std::mutex> lock(training_mutex);
  sentencepiece::SetRandomGeneratorSeed(static_cast<unsigned>(o.seed));
  const auto status = sentencepiece::SentencePieceTrainer::Train(args, &list, &bytes);
  if (!status.ok()) fail("SentencePiece training ({}, vocab size {}): {}", o.type, o.vocab_size, status.ToString());
  return bytes;
}

const std::vector<std::string>& known_charsmaps() {
  static const std::vector<std::string> maps = [] {
    std::vector<std::string> out;
    const std::vector<std::string> text = {"a b c d e f", "b c d e f a", "c d e f a b"};
    SubwordTrainOptions o;
    o.type = "char";
    o.vocab_size = 9;
    o.character_coverage = 1.0;
    for (const char* rule : {"nmt_nfkc", "nfkc", "nmt_nfkc_cf", "nfkc_cf"}) {
      const std::string bytes = train_bytes(text, o, rule);
      Wire w{bytes, 0, "(built-in)"};
      while (!w.done()) {
        std::string_view sub;
        if (w.field(sub) == 3) out.push_back(charsmap_of(sub, "(built-in)"));
      }
    }
    return out;
  }();
  return maps;
}

}  // namespace

struct SubwordModel::Impl {
  std::string bytes;
  sentencepiece::SentencePieceProcessor processor;
};

SubwordModel::SubwordModel(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
SubwordModel::SubwordModel(SubwordModel&&) noexcept = default;
SubwordModel& SubwordModel::operator=(SubwordModel&&) noexcept = default;
SubwordModel::~SubwordModel() = default;

SubwordModel SubwordModel::train(const std::vector<std::string>& sentences, const SubwordTrainOptions& options) {
  if (options.type != "unigram" && options.type != "bpe")
    fail("subword: the model type must be unigram or bpe, got '{}'", options.type);
  if (options.vocab_size < 8 || options.vocab_size > limits::kMaxVocabulary)
    fail("subword: the vocabulary size must be between 8 and {}, got {}", limits::kMaxVocabulary, options.vocab_size);
  if (options.max_sentences < 1) fail("subword: max_sentences must be positive, got {}", options.max_sentences);
  std::vector<std::string> usable;  // SentencePiece skips empty lines anyway; a tab or newline would split one
  for (const std::string& s : sentences)
    if (s.find_first_of("\t\n\r") == std::string::npos && !s.empty()) usable.push_back(s);
  if (usable.empty()) fail("subword: no sentences to train on");
  return from_bytes(train_bytes(usable, options), "(trained subword model)");
}

SubwordModel SubwordModel::load(const std::string& path) {
  return from_bytes(limits::read_bounded_file(path, "subword", kMaxModelBytes), path);
}

SubwordModel SubwordModel::from_bytes(std::string bytes, const std::string& name) {
  check_model_bytes(bytes, name);
  auto impl = std::make_unique<Impl>();
  const auto status = impl->processor.LoadFromSerializedProto(bytes);
  if (!status.ok()) fail("{}: not a usable SentencePiece model: {}", name, status.ToString());
  impl->bytes = std::move(bytes);
  return SubwordModel(std::move(impl));
}

const std::string& SubwordModel::bytes() const { return impl_->bytes; }

void SubwordModel::save(const std::string& path) const { write_file_atomic(path, impl_->bytes); }

std::int64_t SubwordModel::size() const { return impl_->processor.GetPieceSize(); }

std::vector<std::string> SubwordModel::encode(std::string_view text) const {
  std::vector<int> ids;
  const auto status = impl_->processor.Encode(text, &ids);
  if (!status.ok()) fail("subword: cannot encode the text: {}", status.ToString());
  std::vector<std::string> pieces;
  pieces.reserve(ids.size());
  for (int id : ids) pieces.push_back(impl_->processor.IsUnknown(id) ? "<unk>" : impl_->processor.IdToPiece(id));
  return pieces;
}

std::string SubwordModel::decode(const std::vector<std::string>& pieces) const {
  std::string text;
  const auto status = impl_->processor.Decode(pieces, &text);
  if (!status.ok()) fail("subword: cannot decode the pieces: {}", status.ToString());
  return text;
}

bool starts_word(std::string_view piece) { return piece.starts_with(kWordMarker); }

}  // namespace attend
