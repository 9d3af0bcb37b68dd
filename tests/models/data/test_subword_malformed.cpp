// Malformed SentencePiece .model files (--spm-model, DIR/subword.model): each
// is an attend::Error naming the file, never a crash, an abort or an
// out-of-bounds read (the sanitize preset runs these too).
#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/random.hpp"
#include "layers/serialize.hpp"
#include "models/model_dir.hpp"
#include "models/data/subword.hpp"
#include "tests/support/cli_child.hpp"

using namespace attend;
namespace fs = std::filesystem;

namespace {

std::string data_path(const std::string& name) { return std::string(ATTEND_TEST_DATA) + "/" + name; }

using attend::testing::slurp;

struct Scratch : attend::testing::Scratch {
  Scratch() : attend::testing::Scratch("attend_subword_bad") {}
};

// Loading `bytes` either gives a model that works, or throws attend::Error naming `name`.
void loads_or_names(const std::string& bytes, const std::string& name) {
  try {
    const SubwordModel m = SubwordModel::from_bytes(bytes, name);
    const std::vector<std::string> pieces = m.encode("the red car sees ma fenêtre");
    (void)m.decode(pieces);
  } catch (const Error& e) {
    CHECK_MESSAGE(std::string(e.what()).find(name) != std::string::npos, e.what());
  }
}

void refused(const std::string& bytes, const std::string& expected) {
  CHECK_THROWS_WITH_AS(SubwordModel::from_bytes(bytes, "bad.model"), doctest::Contains(expected.c_str()), Error);
  CHECK_THROWS_WITH_AS(SubwordModel::from_bytes(bytes, "bad.model"), doctest::Contains("bad.model"), Error);
}

}  // namespace

TEST_CASE("malformed .model files: empty, garbage, truncated, too large, not a file") {
  Scratch s;
  const std::string good = slurp(data_path("subword_spm_train.model"));
  REQUIRE(good.size() > 1000);
  refused("", "the file is empty");
  refused("source\ttarget\nhello\tbonjour\n", "not a SentencePiece model");
  refused(std::string(100, '\xFF'), "not a SentencePiece model");
  refused(good.substr(0, good.size() / 2), "not a SentencePiece model");
  refused("\x0A\x05\x0A\x03\x61", "not a SentencePiece model");  // a piece field that runs past the end
  refused(std::string("\x08\x01", 2), "no pieces");                  // well-formed, but no pieces
  // Over the limit, refused by its size before it is read.
  const std::string huge = (s.dir / "huge.model").string();
  { std::ofstream(huge, std::ios::binary) << "x"; }
  fs::resize_file(huge, (std::uint64_t{64} << 20) + 1);
  CHECK_THROWS_WITH_AS(SubwordModel::load(huge), doctest::Contains(huge.c_str()), Error);
  CHECK_THROWS_WITH_AS(SubwordModel::load(s.dir.string()), doctest::Contains(s.dir.string().c_str()), Error);
  CHECK_THROWS_WITH_AS(SubwordModel::load((s.dir / "absent.model").string()), doctest::Contains("absent.model"), Error);
  // Every truncation either still holds a whole model (a cut between two pieces) or is refused.
  for (std::size_t n = 1; n < good.size(); n += 7) loads_or_names(good.substr(0, n), "cut.model");
}

TEST_CASE("malformed .model files: hostile pieces, scores and normalization rules") {
  const std::string good = slurp(data_path("subword_spm_train.model"));
  // The unknown piece's name, with a control character or a byte that is not UTF-8.
  const std::size_t at = good.find("<unk>");
  REQUIRE(at != std::string::npos);
  std::string control = good;
  control[at + 2] = '\x01';
  refused(control, "a piece with a control character");
  std::string not_utf8 = good;
  not_utf8[at + 2] = '\xFF';
  refused(not_utf8, "not valid UTF-8");
  // A score that is NaN: the float after the first piece's string (field 2, fixed32: key 0x15).
  std::string nan_score = good;
  const std::size_t score = good.find('\x15', at);
  REQUIRE(score != std::string::npos);
  nan_score.replace(score + 1, 4, std::string("\x00\x00\xC0\x7F", 4));
  refused(nan_score, "score is not finite");
  // A model made by attend carries nmt_nfkc's character map: one changed byte in it is refused.
  const std::string nfkc = slurp(data_path("subword_attend.model"));
  REQUIRE(nfkc.size() > 200000);
  CHECK_NOTHROW(SubwordModel::from_bytes(nfkc, "ok.model"));
  std::string changed = nfkc;
  changed[changed.size() / 2] = static_cast<char>(changed[changed.size() / 2] ^ 0x5A);
  refused(changed, "normalization rule");
}

TEST_CASE("malformed .model files: random byte changes give a working model or an error") {
  const std::string good = slurp(data_path("subword_spm_train.model"));
  Generator gen(15);
  for (int trial = 0; trial < 400; ++trial) {
    std::string bytes = good;
    const int changes = 1 + static_cast<int>(gen.randint(4));
    for (int c = 0; c < changes; ++c)
      bytes[static_cast<std::size_t>(gen.randint(static_cast<std::int64_t>(bytes.size())))] =
          static_cast<char>(gen.randint(256));
    loads_or_names(bytes, "mutant.model");
  }
}

TEST_CASE("a model directory naming a bad subword model is an error naming it") {
  Scratch s;
  // A words model directory, then made into a subword one by hand.
  Seq2SeqConfig c;
  c.source_vocab = c.target_vocab = 6;
  c.embed = c.hidden = 4;
  const Vocabulary v = Vocabulary::from_tokens({"<pad>", "<unk>", "<s>", "</s>", "a", "b"});
  const std::string dir = (s.dir / "m").string();
  save_model_description(dir, c, v, v, TokenizerOptions{});
  Generator init(1);
  Seq2Seq model(c, init);
  nn::save(model, path_in(dir, "model.safetensors"));
  REQUIRE_NOTHROW(load_model_dir(dir));
  nlohmann::json config = nlohmann::json::parse(slurp(path_in(dir, "config.json")));
  auto with_subword = [&](const nlohmann::json& subword) {
    nlohmann::json j = config;
    j["subword"] = subword;
    std::ofstream(path_in(dir, "config.json")) << j.dump();
  };
  with_subword({{"source_model", "../escape.model"}, {"target_model", "subword.model"}});
  CHECK_THROWS_WITH_AS(load_model_dir(dir), doctest::Contains("must name a file in the model directory"), Error);
  with_subword({{"source_model", 7}, {"target_model", "subword.model"}});
  CHECK_THROWS_WITH_AS(load_model_dir(dir), doctest::Contains("subword.source_model must be a string"), Error);
  with_subword("joint");
  CHECK_THROWS_WITH_AS(load_model_dir(dir), doctest::Contains("subword must be an object"), Error);
  with_subword({{"source_model", "subword.model"}, {"target_model", "subword.model"}});
  CHECK_THROWS_WITH_AS(load_model_dir(dir), doctest::Contains(path_in(dir, "subword.model").c_str()), Error);  // absent
  s.write("m/subword.model", "garbage");
  CHECK_THROWS_WITH_AS(load_model_dir(dir), doctest::Contains((path_in(dir, "subword.model") + ": not a SentencePiece model").c_str()),
                       Error);
  // With a good model file it loads (the vocabularies are attend's own; the model only splits text).
  fs::copy_file(data_path("subword_spm_train.model"), path_in(dir, "subword.model"), fs::copy_options::overwrite_existing);
  CHECK(load_model_dir(dir).codecs.source.is_subword());
}
