#include "models/model_dir.hpp"

#include <cstdint>
#include <filesystem>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/io/file_io.hpp"
#include "core/io/limits.hpp"
#include "core/io/printable.hpp"
#include "layers/serialize.hpp"
#include "models/train/checkpoint.hpp"
#include "models/data/subword.hpp"
#include "models/quantize/quantize.hpp"

namespace attend {

std::string path_in(const std::string& dir, const std::string& name) {
  return (std::filesystem::path(dir) / name).string();
}

std::string side_difference(ModelSide side, const LoadedModel& first, const LoadedModel& other,
                            std::string_view first_name) {
  const bool target = side == ModelSide::Target;
  const char* name = target ? "target" : "source";
  const std::vector<std::string>& a = (target ? first.target_vocab : first.source_vocab).tokens();
  const std::vector<std::string>& b = (target ? other.target_vocab : other.source_vocab).tokens();
  if (a.size() != b.size()) return fmt::format("{}.vocab has {} tokens, {}'s has {}", name, b.size(), first_name, a.size());
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i] != b[i])
      return fmt::format("{}.vocab line {} (token {}) is '{}', {}'s is '{}'", name, i + 1, i, printable(b[i]), first_name,
                         printable(a[i]));
  const TextCodec& x = target ? first.codecs.target : first.codecs.source;
  const TextCodec& y = target ? other.codecs.target : other.codecs.source;
  if (x.is_subword() != y.is_subword())
    return fmt::format("the {} side is read as {}, {}'s as {}", name, y.is_subword() ? "SentencePiece pieces" : "words",
                       first_name, x.is_subword() ? "SentencePiece pieces" : "words");
  if (x.is_subword() && x.subword()->bytes() != y.subword()->bytes())
    return fmt::format("the {} side is read by another SentencePiece model than {}'s", name, first_name);
  return "";
}

std::string ensemble_difference(const LoadedModel& first, const LoadedModel& other, std::string_view first_name) {
  if (first.int8 != other.int8)
    return fmt::format("its weights are {}, {}'s are {} (models decode together only with others of the same kind)",
                       other.int8 ? "int8" : "float32", first_name, first.int8 ? "int8" : "float32");
  for (ModelSide side : {ModelSide::Target, ModelSide::Source})
    if (std::string d = side_difference(side, first, other, first_name); !d.empty()) return d;
  // The source text is read with the first model's tokenizer options: the others' must be the same.
  const TokenizerOptions &a = first.codecs.source.tokenizer(), &b = other.codecs.source.tokenizer();
  if (a.lowercase != b.lowercase)
    return fmt::format("tokenizer.lowercase is {}, {}'s is {}", b.lowercase, first_name, a.lowercase);
  if (!first.codecs.source.is_subword() && a.split_elision != b.split_elision)
    return fmt::format("tokenizer.split_elision is {}, {}'s is {}", b.split_elision, first_name, a.split_elision);
  return "";
}

void check_ensemble(std::span<const LoadedModel> models, std::span<const std::string> names) {
  if (names.size() != models.size())
    fail("ensemble: {} names for {} models", names.size(), models.size());
  if (models.empty()) fail("ensemble: no model to decode with");
  if (models.size() > static_cast<std::size_t>(limits::kMaxEnsemble))
    fail("ensemble: {} models, at most {} (limits::kMaxEnsemble, core/io/limits.hpp)", models.size(),
         limits::kMaxEnsemble);
  for (std::size_t m = 1; m < models.size(); ++m)
    if (std::string d = ensemble_difference(models[0], models[m], names[0]); !d.empty())
      fail("ensemble: {}: {}; an ensemble's models must share their target side and read the source alike", names[m], d);
}

namespace {
std::string vocab_text(const Vocabulary& v) {
  std::string text;
  for (const std::string& t : v.tokens()) text += t + "\n";
  return text;
}
Vocabulary read_vocab(const std::string& path) {
  std::vector<std::string> tokens = split_lines(limits::read_bounded_file(path, "load_model_dir"));
  try {
    return Vocabulary::from_tokens(std::move(tokens));
  } catch (const Error& e) {
    fail("{}: {}", path, e.what());
  }
}
using json = nlohmann::json;

// A JSON value for a message: short, and never a dump of a huge object.
std::string shown(const json& j) {
  if (j.is_object()) return fmt::format("an object of size {}", j.size());
  if (j.is_array()) return fmt::format("an array of size {}", j.size());
  std::string text = j.dump(-1, ' ', false, json::error_handler_t::replace);
  return text.size() <= 40 ? text : text.substr(0, 37) + "...";
}

// config.json, checked key by key so that a wrong value is named rather than
// truncated (8.5 is not 8) or wrapped (1e300 is not -9223372036854775808).
class ConfigReader {
 public:
  explicit ConfigReader(std::string path) : path_(std::move(path)) {}

  [[noreturn]] void bad(const std::string& key, const std::string& problem) const {
    fail("{}: {} {}", path_, key, problem);
  }
  const json& object(const json& parent, const char* key, const std::string& name) const {
    auto it = parent.find(key);
    if (it == parent.end()) bad(name, "is missing");
    if (!it->is_object()) bad(name, fmt::format("must be an object, got {}", shown(*it)));
    return *it;
  }
  const json& value(const json& parent, const std::string& prefix, const char* key) const {
    auto it = parent.find(key);
    if (it == parent.end()) bad(prefix + key, "is missing");
    return *it;
  }
  std::int64_t integer(const json& parent, const std::string& prefix, const char* key) const {
    const json& v = value(parent, prefix, key);
    if (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX))
      bad(prefix + key, fmt::format("is {}, far too large", shown(v)));
    if (!v.is_number_integer()) bad(prefix + key, fmt::format("must be an integer, got {}", shown(v)));
    return v.get<std::int64_t>();
  }
  bool boolean(const json& parent, const std::string& prefix, const char* key) const {
    const json& v = value(parent, prefix, key);
    if (!v.is_boolean()) bad(prefix + key, fmt::format("must be true or false, got {}", shown(v)));
    return v.get<bool>();
  }
  double number(const json& parent, const std::string& prefix, const char* key) const {
    const json& v = value(parent, prefix, key);
    if (!v.is_number()) bad(prefix + key, fmt::format("must be a number, got {}", shown(v)));
    return v.get<double>();
  }
  std::string string(const json& parent, const std::string& prefix, const char* key) const {
    const json& v = value(parent, prefix, key);
    if (!v.is_string()) bad(prefix + key, fmt::format("must be a string, got {}", shown(v)));
    return v.get<std::string>();
  }

 private:
  std::string path_;
};

constexpr const char* kFormat = "attend-seq2seq-1";

void read_config(const std::string& path, LoadedModel& m) {
  try {
    m.info = json::parse(limits::read_bounded_file(path, "load_model_dir"));
  } catch (const json::exception& e) {
    fail("{}: not valid JSON: {}", path, e.what());
  }
  const ConfigReader r(path);
  if (!m.info.is_object()) fail("{}: must hold a JSON object, got {}", path, shown(m.info));
  if (const std::string format = r.string(m.info, "", "format"); format != kFormat)
    r.bad("format", fmt::format("is '{}'; this attend reads '{}'", printable(format), kFormat));
  const json& model = r.object(m.info, "model", "model");
  Seq2SeqConfig& c = m.config;
  c.source_vocab = r.integer(model, "model.", "source_vocab");
  c.target_vocab = r.integer(model, "model.", "target_vocab");
  c.embed = r.integer(model, "model.", "embed");
  c.hidden = r.integer(model, "model.", "hidden");
  c.layers = r.integer(model, "model.", "layers");
  c.bidirectional = r.boolean(model, "model.", "bidirectional");
  c.dropout = r.number(model, "model.", "dropout");
  const std::string attention = r.string(model, "model.", "attention");
  try {
    c.attention = parse_attention(attention);
    c.validate();  // sizes against core/io/limits.hpp, before anything is allocated
  } catch (const Error& e) {
    fail("{}: {}", path, e.what());
  }
  if (m.info.contains("tokenizer")) {
    const json& tokenizer = r.object(m.info, "tokenizer", "tokenizer");
    if (tokenizer.contains("lowercase")) m.tokenizer.lowercase = r.boolean(tokenizer, "tokenizer.", "lowercase");
    if (tokenizer.contains("split_elision"))
      m.tokenizer.split_elision = r.boolean(tokenizer, "tokenizer.", "split_elision");
  }
  m.codecs = TextCodecs::words(m.tokenizer);
  if (m.info.contains("weights")) {
    const std::string weights = r.string(m.info, "", "weights");
    if (weights != "int8" && weights != "float32")
      r.bad("weights", fmt::format("is '{}'; it is float32 or int8", printable(weights)));
    m.int8 = weights == "int8";
  }
}

// The subword models named in config.json's "subword" (absent: a words model,
// as every model made before subwords). Each name is a file in the directory.
void read_subword_models(const std::string& dir, const std::string& config_path, LoadedModel& m) {
  if (!m.info.contains("subword")) return;
  const ConfigReader r(config_path);
  const json& subword = r.object(m.info, "subword", "subword");
  auto file = [&](const char* key) {
    const std::string name = r.string(subword, "subword.", key);
    if (name.empty() || name == "." || name == ".." || name.find_first_of("/\\") != std::string::npos ||
        name.find('\0') != std::string::npos)
      r.bad(std::string("subword.") + key, fmt::format("must name a file in the model directory, got '{}'", printable(name)));
    return name;
  };
  const std::string source = file("source_model"), target = file("target_model");
  auto source_model = std::make_shared<const SubwordModel>(SubwordModel::load(path_in(dir, source)));
  auto target_model = source == target ? source_model
                                       : std::make_shared<const SubwordModel>(SubwordModel::load(path_in(dir, target)));
  m.codecs = {TextCodec(source_model, m.tokenizer), TextCodec(target_model, m.tokenizer)};
}

}  // namespace

void save_model_description(const std::string& dir, const Seq2SeqConfig& config, const Vocabulary& source_vocab,
                            const Vocabulary& target_vocab, const TextCodecs& codecs, const nlohmann::json& extra) {
  if (codecs.source.is_subword() != codecs.target.is_subword())
    fail("save_model_description: both sides must be words, or both subwords");
  if (!codecs.source.is_subword())
    return save_model_description(dir, config, source_vocab, target_vocab, codecs.source.tokenizer(), extra);
  std::filesystem::create_directories(dir);
  nlohmann::json with_subword = extra;
  const bool joint = codecs.source.subword_ptr() == codecs.target.subword_ptr() ||
                     codecs.source.subword()->bytes() == codecs.target.subword()->bytes();
  const std::string source = joint ? "subword.model" : "source.model", target = joint ? "subword.model" : "target.model";
  codecs.source.subword()->save(path_in(dir, source));
  if (!joint) codecs.target.subword()->save(path_in(dir, target));
  json& s = with_subword["subword"];
  if (!s.is_object()) s = json::object();
  s["source_model"] = source;
  s["target_model"] = target;
  save_model_description(dir, config, source_vocab, target_vocab, codecs.source.tokenizer(), with_subword);
}

void save_model_description(const std::string& dir, const Seq2SeqConfig& config, const Vocabulary& source_vocab,
                            const Vocabulary& target_vocab, const TokenizerOptions& tokenizer,
                            const nlohmann::json& extra) {
  std::filesystem::create_directories(dir);
  nlohmann::json j = extra;
  j["model"] = config.to_json();
  j["tokenizer"] = {{"lowercase", tokenizer.lowercase}, {"split_elision", tokenizer.split_elision}};
  j["source_vocab"] = "source.vocab";
  j["target_vocab"] = "target.vocab";
  j["format"] = kFormat;
  write_file_atomic(path_in(dir, "source.vocab"), vocab_text(source_vocab));
  write_file_atomic(path_in(dir, "target.vocab"), vocab_text(target_vocab));
  write_file_atomic(path_in(dir, "config.json"), j.dump(2) + "\n");
}

LoadedModel load_model_dir(const std::string& dir, const std::string& weights) {
  std::error_code ec;
  const auto status = std::filesystem::status(dir, ec);
  if (!std::filesystem::exists(status)) fail("{}: not a model directory (it does not exist)", dir);
  if (!std::filesystem::is_directory(status))
    fail("{}: not a model directory (it is not a directory; --model takes the directory attend train wrote)", dir);
  LoadedModel m;
  read_config(path_in(dir, "config.json"), m);
  read_subword_models(dir, path_in(dir, "config.json"), m);
  m.source_vocab = read_vocab(path_in(dir, "source.vocab"));
  m.target_vocab = read_vocab(path_in(dir, "target.vocab"));
  if (m.source_vocab.size() != m.config.source_vocab || m.target_vocab.size() != m.config.target_vocab)
    fail("{}: the vocabularies ({} and {} tokens) do not match config.json ({} and {})", dir, m.source_vocab.size(),
         m.target_vocab.size(), m.config.source_vocab, m.config.target_vocab);
  // A parameter takes at least 4 bytes (float32) in the weights file: a config
  // promising more than the file can hold is refused before the model is built
  // (building allocates and initialises every parameter, up to limits::kMaxParameters).
  const std::string weights_path = path_in(dir, weights);
  {
    // int8 weights take 1 byte, and an int8 model's are most of its parameters.
    const std::uint64_t needed = static_cast<std::uint64_t>(m.config.parameter_count()) * (m.int8 ? 1 : 4);
    std::error_code error;
    const std::uintmax_t size = std::filesystem::file_size(weights_path, error);
    if (!error && size < needed)
      fail("{}: config.json describes a model of {} parameters, at least {} of weights, but {} has {} bytes", dir,
           m.config.parameter_count(), limits::bytes_text(needed), weights_path, size);
  }
  Generator init(0);
  m.model = std::make_unique<Seq2Seq>(m.config, init);
  if (m.int8) load_int8(*m.model, weights_path);
  else nn::load(*m.model, weights_path);
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
  // A symbolic link is followed: the directory it names is replaced, and the
  // link stays (staged beside that directory, on its file system).
  p = fs::path(resolve_symlinks(p.string())).lexically_normal();
  if (p.has_filename() == false && p.has_parent_path()) p = p.parent_path();
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
  // Made now, so that a place where --out cannot be is reported under its own name.
  std::error_code made;
  fs::create_directories(staging_, made);
  if (made) fail("{}: cannot create directories: {}", final_, made.message());
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
