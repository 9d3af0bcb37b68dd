// config.json (load_model_dir), trainer_state.json (Trainer::resume) and an int8
// model's model.safetensors (load_model_dir, load_int8): each is fuzzed inside a
// real model directory made once per process, holding a tiny model whose other
// files are valid, so that the input file is the only bad one.
// The committed seeds (tests/fuzz/make_corpus.py) describe this same model.
#include <filesystem>
#include <memory>

#include "core/error.hpp"
#include "core/random.hpp"
#include "layers/serialize.hpp"
#include "models/model_dir.hpp"
#include "models/quantize/quantize.hpp"
#include "models/train/trainer.hpp"
#include "tests/fuzz/targets.hpp"

namespace attend::fuzz {

namespace {

Seq2SeqConfig tiny_config() {
  Seq2SeqConfig c;
  c.source_vocab = 6;
  c.target_vocab = 6;
  c.embed = 4;
  c.hidden = 4;
  c.layers = 1;
  c.bidirectional = true;
  c.dropout = 0.0;
  c.attention = AttentionKind::Additive;
  return c;
}

Vocabulary tiny_vocab() { return Vocabulary::from_tokens({"<pad>", "<unk>", "<s>", "</s>", "a", "b"}); }

// DIR/config.json, the vocabularies and model.safetensors of tiny_config().
const std::string& model_dir() {
  static const std::string dir = [] {
    const std::string d = (std::filesystem::path(scratch_dir()) / "model").string();
    const Seq2SeqConfig config = tiny_config();
    save_model_description(d, config, tiny_vocab(), tiny_vocab(), TokenizerOptions{});
    Generator init(1);
    Seq2Seq model(config, init);
    nn::save(model, path_in(d, "model.safetensors"));
    return d;
  }();
  return dir;
}

// DIR/config.json ("weights": "int8") and the vocabularies of tiny_config(); the
// fuzz input is its model.safetensors.
const std::string& int8_model_dir() {
  static const std::string dir = [] {
    const std::string d = (std::filesystem::path(scratch_dir()) / "int8model").string();
    save_model_description(d, tiny_config(), tiny_vocab(), tiny_vocab(), TokenizerOptions{}, {{"weights", "int8"}});
    return d;
  }();
  return dir;
}

// A trainer of the tiny model with a checkpoint in DIR (last.safetensors,
// optimizer.safetensors, trainer_state.json), kept for the whole process.
struct Training {
  Vocabulary vocab = tiny_vocab();
  std::vector<EncodedPair> train{{{4, 5}, {5, 4}}, {{5}, {4}}};
  std::vector<EncodedPair> valid{{{4}, {5}}};
  Generator init{1};
  Seq2Seq model{tiny_config(), init};
  std::string dir;
  std::unique_ptr<Trainer> trainer;

  Training() {
    dir = (std::filesystem::path(scratch_dir()) / "checkpoint").string();
    TrainOptions options;
    options.batch = 2;
    options.epochs = 2;
    options.bleu_sentences = 0;
    options.out_dir = dir;
    trainer = std::make_unique<Trainer>(model, vocab, train, valid, options);
    trainer->save_checkpoint();
  }
};

Training& training() {
  static Training t;
  return t;
}

}  // namespace

int fuzz_config(const std::uint8_t* data, std::size_t size) {
  const std::string& dir = model_dir();
  scratch_file("model/config.json", as_text(data, size));
  try {
    const LoadedModel loaded = load_model_dir(dir);
    if (loaded.source_vocab.size() != loaded.config.source_vocab) finding("load_model_dir: vocabulary size mismatch");
  } catch (const Error& e) {
    expected(e);
  }
  return 0;
}

int fuzz_quantized_weights(const std::uint8_t* data, std::size_t size) {
  const std::string& dir = int8_model_dir();
  scratch_file("int8model/model.safetensors", as_text(data, size));
  try {
    const LoadedModel loaded = load_model_dir(dir);
    if (!loaded.int8 || loaded.model->int8() == nullptr) finding("load_model_dir: an int8 directory loaded without int8 weights");
  } catch (const Error& e) {
    expected(e);
  }
  return 0;
}

int fuzz_trainer_state(const std::uint8_t* data, std::size_t size) {
  Training& t = training();
  scratch_file("checkpoint/trainer_state.json", as_text(data, size));
  try {
    t.trainer->resume();
  } catch (const Error& e) {
    expected(e);
  }
  return 0;
}

}  // namespace attend::fuzz
