// models/train/average and `attend average`: the mean of identical models is them,
// bit for bit; of two known models the elementwise mean; mismatched inputs,
// too few or too many, and an existing --out are refused before anything is written.
#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/io/limits.hpp"
#include "core/io/safetensors.hpp"
#include "layers/serialize.hpp"
#include "models/train/average.hpp"
#include "models/model_dir.hpp"
#include "tests/support/scratch.hpp"
#include "tools/cli/cli.hpp"

using namespace attend;
namespace fs = std::filesystem;

namespace {

struct Scratch : attend::testing::Scratch {
  Scratch() : attend::testing::Scratch("attend_average") {}
};

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

Vocabulary vocab(std::vector<std::string> words) {
  std::vector<std::string> tokens = {"<pad>", "<unk>", "<s>", "</s>"};
  tokens.insert(tokens.end(), words.begin(), words.end());
  return Vocabulary::from_tokens(tokens);
}

struct ModelSpec {
  std::uint64_t seed = 1;
  std::int64_t hidden = 5;
  Vocabulary target = vocab({"le", "chat", "noir"});
  TokenizerOptions tokenizer{};
  DType dtype = Float32;
};

// A model directory with untrained weights drawn from spec.seed.
std::string write_model(const Scratch& s, const std::string& name, const ModelSpec& spec = {}) {
  const Vocabulary source = vocab({"the", "black", "cat"});
  Seq2SeqConfig c;
  c.source_vocab = source.size();
  c.target_vocab = spec.target.size();
  c.embed = 4;
  c.hidden = spec.hidden;
  Generator init(spec.seed);
  Seq2Seq model(c, init, spec.dtype);
  const std::string dir = s.path(name);
  save_model_description(dir, c, source, spec.target, spec.tokenizer);
  nn::save(model, path_in(dir, "model.safetensors"));
  return dir;
}

std::map<std::string, Tensor> tensors_of(const std::string& dir, const std::string& file = "model.safetensors") {
  return load_safetensors(path_in(dir, file)).tensors;
}

int run_attend(std::vector<std::string> args) {
  args.insert(args.begin(), "attend");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  return tools::run_cli(static_cast<int>(argv.size()), argv.data(), "test");
}

}  // namespace

TEST_CASE("the average of identical models is the model, bit for bit, the files of the first are copied") {
  Scratch s;
  const std::string a = write_model(s, "a"), b = s.path("b"), c = s.path("c");
  fs::copy(a, b, fs::copy_options::recursive);
  fs::copy(a, c, fs::copy_options::recursive);
  const std::string out = s.path("out");
  const AverageReport r = average_model_dirs({a, b, c}, out);  // three: (x + x + x) / 3 must be x too
  CHECK(r.models == 3);
  CHECK_FALSE(r.replaced);
  const auto original = tensors_of(a), averaged = tensors_of(out);
  REQUIRE(averaged.size() == original.size());
  CHECK(r.tensors == static_cast<std::int64_t>(original.size()));
  for (const auto& [name, t] : original) {
    CAPTURE(name);
    CHECK(equal(averaged.at(name), t));
  }
  CHECK(slurp(path_in(out, "source.vocab")) == slurp(path_in(a, "source.vocab")));
  CHECK(slurp(path_in(out, "target.vocab")) == slurp(path_in(a, "target.vocab")));
  const nlohmann::json info = nlohmann::json::parse(slurp(path_in(out, "config.json")));
  CHECK(info["averaged_from"] == nlohmann::json({a, b, c}));
  CHECK(info["model"] == nlohmann::json::parse(slurp(path_in(a, "config.json")))["model"]);
  CHECK(load_model_dir(out).model->num_parameters() == r.parameters);
}

TEST_CASE("the average of two known models is their elementwise mean") {
  Scratch s;
  ModelSpec second;
  second.seed = 2;
  const std::string a = write_model(s, "a"), b = write_model(s, "b", second), out = s.path("out");
  CHECK(run_attend({"average", "--out", out, a, b}) == 0);
  const auto ta = tensors_of(a), tb = tensors_of(b), mean = tensors_of(out);
  REQUIRE(mean.size() == ta.size());
  std::int64_t differing = 0;
  for (const auto& [name, t] : ta) {
    CAPTURE(name);
    const std::vector<double> x = t.to_vector(), y = tb.at(name).to_vector(), m = mean.at(name).to_vector();
    REQUIRE(mean.at(name).dtype() == Float32);
    REQUIRE(m.size() == x.size());
    for (std::size_t i = 0; i < x.size(); ++i) {
      CHECK(m[i] == static_cast<double>(static_cast<float>((x[i] + y[i]) / 2)));
      differing += x[i] != y[i];
    }
  }
  CHECK(differing > 100);  // the two models really differ
}

TEST_CASE("--weights last averages the inputs' last checkpoints") {
  Scratch s;
  ModelSpec second;
  second.seed = 2;
  const std::string a = write_model(s, "a"), b = write_model(s, "b", second), out = s.path("out");
  // Each run's last checkpoint holds the other's weights: best and last differ.
  fs::create_directories(path_in(a, "checkpoint"));
  fs::create_directories(path_in(b, "checkpoint"));
  fs::copy_file(path_in(b, "model.safetensors"), path_in(a, "checkpoint/last.safetensors"));
  fs::copy_file(path_in(a, "model.safetensors"), path_in(b, "checkpoint/last.safetensors"));
  CHECK(run_attend({"average", "--weights", "last", "--out", out, a}) == 1);  // one input
  CHECK(run_attend({"average", "--weights", "last", "--out", out, a, a}) == 0);
  for (const auto& [name, t] : tensors_of(b)) CHECK(equal(tensors_of(out).at(name), t));
  CHECK(run_attend({"average", "--weights", "newest", "--out", s.path("x"), a, b}) != 0);
  fs::remove(path_in(b, "checkpoint/last.safetensors"));
  CHECK_THROWS_AS(average_model_dirs({a, b}, s.path("y"), {false, "checkpoint/last.safetensors"}), Error);
  CHECK_FALSE(fs::exists(s.path("y")));
}

TEST_CASE("mismatched inputs are refused, naming the first difference, and nothing is written") {
  Scratch s;
  const std::string a = write_model(s, "a"), out = s.path("out");
  ModelSpec wider;
  wider.hidden = 6;
  CHECK_THROWS_WITH_AS(average_model_dirs({a, write_model(s, "wider", wider)}, out),
                       fmt::format("attend average: {}: model.hidden is 6, the first input's is 5",
                                   path_in(s.path("wider"), "config.json"))
                           .c_str(),
                       Error);
  ModelSpec renamed;
  renamed.target = vocab({"le", "chien", "noir"});
  CHECK_THROWS_WITH_AS(average_model_dirs({a, write_model(s, "renamed", renamed)}, out),
                       fmt::format("attend average: {}: target.vocab line 6 (token 5) is 'chien', the first input's is 'chat'",
                                   s.path("renamed"))
                           .c_str(),
                       Error);
  ModelSpec lower;
  lower.tokenizer.lowercase = true;
  CHECK_THROWS_WITH_AS(average_model_dirs({a, write_model(s, "lower", lower)}, out),
                       fmt::format("attend average: {}: tokenizer.lowercase is true, the first input's is false",
                                   path_in(s.path("lower"), "config.json"))
                           .c_str(),
                       Error);
  ModelSpec doubled;
  doubled.dtype = Float64;
  CHECK_THROWS_WITH_AS(average_model_dirs({a, write_model(s, "doubled", doubled)}, out),
                       fmt::format("attend average: {}: tensor 'attention.W_k' is float64, the first input's is float32",
                                   path_in(s.path("doubled"), "model.safetensors"))
                           .c_str(),
                       Error);
  // A NaN weight: load_model_dir refuses the input.
  const std::string broken = s.path("broken");
  fs::copy(a, broken, fs::copy_options::recursive);
  auto t = tensors_of(broken);
  t.at("project.bias").set({0}, std::nan(""));
  save_safetensors(path_in(broken, "model.safetensors"), t);
  CHECK_THROWS_WITH_AS(average_model_dirs({a, broken}, out),
                       doctest::Contains("the weights are not finite ('project.bias' holds a NaN or infinity)"), Error);
  // An extra tensor.
  const std::string extra = s.path("extra");
  fs::copy(a, extra, fs::copy_options::recursive);
  t = tensors_of(extra);
  t.emplace("stray", zeros(Shape{2}));
  save_safetensors(path_in(extra, "model.safetensors"), t);
  CHECK_THROWS_AS(average_model_dirs({a, extra}, out), Error);  // nn::load or check_tensors, whichever sees it first
  CHECK_THROWS_AS(average_model_dirs({a, s.path("missing")}, out), Error);
  CHECK_FALSE(fs::exists(out));
  for (const auto& entry : fs::directory_iterator(s.dir))  // no staging directory left behind
    CHECK(entry.path().filename().string().find(".tmp-") == std::string::npos);
}

TEST_CASE("too few or too many inputs are refused") {
  Scratch s;
  const std::string a = write_model(s, "a"), out = s.path("out");
  CHECK_THROWS_WITH_AS(average_model_dirs({}, out), "attend average: needs at least two model directories to average, got 0",
                       Error);
  CHECK_THROWS_WITH_AS(average_model_dirs({a}, out), "attend average: needs at least two model directories to average, got 1",
                       Error);
  CHECK(run_attend({"average", "--out", out}) == 1);
  const std::vector<std::string> many(static_cast<std::size_t>(limits::kMaxAverage + 1), a);
  CHECK_THROWS_WITH_AS(average_model_dirs(many, out),
                       fmt::format("attend average: {} model directories, at most {} (limits::kMaxAverage, core/io/limits.hpp)",
                                   limits::kMaxAverage + 1, limits::kMaxAverage)
                           .c_str(),
                       Error);
  CHECK_FALSE(fs::exists(out));
}

TEST_CASE("an existing --out is replaced only with --overwrite") {
  Scratch s;
  ModelSpec second;
  second.seed = 2;
  const std::string a = write_model(s, "a"), b = write_model(s, "b", second);
  const std::string out = write_model(s, "out", second);  // a model is already there
  const std::string before = slurp(path_in(out, "model.safetensors"));
  CHECK_THROWS_WITH_AS(
      average_model_dirs({a, b}, out),
      fmt::format("attend average: --out {}: the directory exists; pass --overwrite to replace it, or another --out", out)
          .c_str(),
      Error);
  CHECK(run_attend({"average", "--out", out, a, b}) == 1);
  CHECK(slurp(path_in(out, "model.safetensors")) == before);
  AverageOptions o;
  o.overwrite = true;
  const AverageReport r = average_model_dirs({a, a}, out, o);
  CHECK(r.replaced);
  for (const auto& [name, t] : tensors_of(a)) CHECK(equal(tensors_of(out).at(name), t));
  // An input may be the output: every input is read before the output replaces it.
  CHECK(run_attend({"average", "--overwrite", "--out", a, a, b}) == 0);
  CHECK(tensors_of(a).at("project.bias").to_vector() != tensors_of(b).at("project.bias").to_vector());
  // An empty directory is no model to lose.
  fs::create_directories(s.path("empty"));
  CHECK_FALSE(average_model_dirs({b, b}, s.path("empty")).replaced);
}
