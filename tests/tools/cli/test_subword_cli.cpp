// Subwords through the command line: attend train --subword / --spm-model,
// then translate and eval of the model directory it wrote. Each command runs
// as main() does (tools::run_cli) in a forked child, so that a crash is a
// failed check rather than a dead test program.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/data/dataset.hpp"
#include "models/model_dir.hpp"
#include "tests/support/cli_child.hpp"
#include "tools/cli/cli.hpp"

using namespace attend;
namespace fs = std::filesystem;

namespace {

using Result = attend::testing::CliResult;
using attend::testing::contains;
using attend::testing::slurp;

// Each test's own scratch directory.
struct Scratch : attend::testing::Scratch {
  Scratch() : attend::testing::Scratch("attend_subword_cli") {}
};

// attend ARGS in a child; training runs get 300 s.
Result attend_cli(const Scratch& s, std::vector<std::string> args, const std::string& input = "") {
  return attend::testing::attend_cli(s, std::move(args), input, 300);
}

// A small parallel text: toy pairs as TSV, and a few of them to translate.
std::string write_corpus(const Scratch& s) {
  ToyCorpusOptions o;
  o.n = 300;
  o.min_len = 3;
  o.max_len = 6;
  std::string tsv;
  for (const SentencePair& p : toy_pairs(o)) tsv += p.source + "\t" + p.target + "\n";
  return s.write("corpus.tsv", tsv);
}

const std::vector<std::string> kSmall = {"--embed", "8", "--hidden", "8", "--max-steps", "3", "--epochs", "1",
                                         "--bleu-sentences", "5", "--batch", "16"};

std::vector<std::string> train_args(const std::string& corpus, const std::string& out, std::vector<std::string> extra) {
  std::vector<std::string> args = {"train", "--data", corpus, "--out", out};
  args.insert(args.end(), kSmall.begin(), kSmall.end());
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

void check_translates(const Scratch& s, const std::string& dir, const std::string& corpus) {
  const Result t = attend_cli(s, {"translate", "--model", dir}, "the red car\n\nthe small dog sees the cat\n");
  CHECK_MESSAGE(t.exit_code == 0, t.err);
  std::vector<std::string> lines;
  std::istringstream in(t.out);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  CHECK(lines.size() == 3);  // one output line per input line
  CHECK(!contains(t.out, "\xE2\x96\x81"));  // text, not pieces
  const Result e = attend_cli(s, {"eval", "--model", dir, "--data", corpus});
  CHECK_MESSAGE(e.exit_code == 0, e.err);
  CHECK(contains(e.out, "BLEU "));
  CHECK(contains(e.out, "tok:13a"));  // sacreBLEU's tokenization of the detokenized text
}

}  // namespace

TEST_CASE("attend train --subword: a joint model in DIR/subword.model, then translate and eval") {
  Scratch s;
  const std::string corpus = write_corpus(s), dir = s.path("joint");
  const Result r = attend_cli(s, train_args(corpus, dir, {"--subword", "unigram", "--vocab-size", "120"}));
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  CHECK(contains(r.out, "one joint model"));
  CHECK(contains(r.out, "unknown tokens in validation"));
  CHECK(fs::exists(dir + "/subword.model"));
  CHECK(!fs::exists(dir + "/source.model"));
  const nlohmann::json config = nlohmann::json::parse(slurp(dir + "/config.json"));
  CHECK(config["subword"]["type"] == "unigram");
  CHECK(config["subword"]["vocab_size"] == 120);
  CHECK(config["subword"]["source_model"] == "subword.model");
  const LoadedModel m = load_model_dir(dir);
  CHECK(m.codecs.source.is_subword());
  CHECK(m.codecs.source.subword_ptr() == m.codecs.target.subword_ptr());
  CHECK(m.codecs.source.subword()->size() == 120);
  check_translates(s, dir, corpus);
  // --resume reads the saved SentencePiece model (same vocabularies) and goes on.
  std::vector<std::string> more = train_args(corpus, dir, {"--subword", "unigram", "--vocab-size", "120", "--resume"});
  more[std::find(more.begin(), more.end(), "--max-steps") - more.begin() + 1] = "5";
  const Result resumed = attend_cli(s, more);
  CHECK_MESSAGE(resumed.exit_code == 0, resumed.err);
  CHECK(contains(resumed.out, "resuming"));
  // Resuming a subword run as words is refused, by name.
  const Result as_words = attend_cli(s, train_args(corpus, dir, {"--resume"}));
  CHECK(as_words.exit_code != 0);
  CHECK(contains(as_words.err, "subwords"));
}

TEST_CASE("attend train --subword bpe --subword-sides separate: DIR/source.model and DIR/target.model") {
  Scratch s;
  const std::string corpus = write_corpus(s), dir = s.path("separate");
  const Result r =
      attend_cli(s, train_args(corpus, dir, {"--subword", "bpe", "--vocab-size", "100", "--subword-sides", "separate"}));
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  CHECK(fs::exists(dir + "/source.model"));
  CHECK(fs::exists(dir + "/target.model"));
  CHECK(!fs::exists(dir + "/subword.model"));
  const LoadedModel m = load_model_dir(dir);
  CHECK(m.codecs.source.subword_ptr() != m.codecs.target.subword_ptr());
  check_translates(s, dir, corpus);
}

TEST_CASE("attend train --spm-model: a model made by spm_train, copied into the model directory") {
  Scratch s;
  const std::string corpus = write_corpus(s), dir = s.path("spm");
  const std::string spm = std::string(ATTEND_TEST_DATA) + "/subword_spm_train.model";
  const Result r = attend_cli(s, train_args(corpus, dir, {"--spm-model", spm}));
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  CHECK(slurp(dir + "/subword.model") == slurp(spm));  // byte for byte
  check_translates(s, dir, corpus);
  // One per side.
  const std::string sides = s.path("spm_sides");
  const std::string other = std::string(ATTEND_TEST_DATA) + "/subword_attend.model";
  const Result per_side = attend_cli(s, train_args(corpus, sides, {"--spm-source-model", other, "--spm-target-model", spm}));
  REQUIRE_MESSAGE(per_side.exit_code == 0, per_side.err);
  CHECK(slurp(sides + "/source.model") == slurp(other));
  CHECK(slurp(sides + "/target.model") == slurp(spm));
  // Flags that cannot go together say so.
  const Result both = attend_cli(s, train_args(corpus, s.path("x"), {"--spm-model", spm, "--subword", "bpe"}));
  CHECK(both.exit_code != 0);
  CHECK(contains(both.err, "--spm-model"));
  const Result half = attend_cli(s, train_args(corpus, s.path("y"), {"--spm-source-model", spm}));
  CHECK(half.exit_code != 0);
  CHECK(contains(half.err, "--spm-target-model"));
  const Result garbage = attend_cli(s, train_args(corpus, s.path("z"), {"--spm-model", corpus}));
  CHECK(garbage.exit_code != 0);
  CHECK(contains(garbage.err, corpus + ": not a SentencePiece model"));
}

TEST_CASE("without --subword attend train makes a words model, as before") {
  Scratch s;
  const std::string corpus = write_corpus(s), dir = s.path("words");
  const Result r = attend_cli(s, train_args(corpus, dir, {}));
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  CHECK(!contains(r.out, "subwords:"));
  const nlohmann::json config = nlohmann::json::parse(slurp(dir + "/config.json"));
  CHECK(!config.contains("subword"));
  for (const auto& entry : fs::directory_iterator(dir)) CHECK(entry.path().extension() != ".model");
  CHECK(!load_model_dir(dir).codecs.source.is_subword());
  // --vocab-size and --subword-sides belong to --subword.
  const Result stray = attend_cli(s, train_args(corpus, s.path("w2"), {"--vocab-size", "100"}));
  CHECK(stray.exit_code != 0);
}

TEST_CASE("a subword model's alignments name words, its <unk> replacement and its average work on pieces") {
  Scratch s;
  const std::string corpus = write_corpus(s), dir = s.path("joint");
  REQUIRE(attend_cli(s, train_args(corpus, dir, {"--subword", "unigram", "--vocab-size", "120"})).exit_code == 0);
  const std::string input = "the red car sleeps\nthe small dog sees the cat\n";
  const Result hard = attend_cli(s, {"translate", "--model", dir, "--alignments", "hard", "--quiet"}, input);
  const Result soft = attend_cli(s, {"translate", "--model", dir, "--alignments", "soft", "--quiet"}, input);
  REQUIRE_MESSAGE(hard.exit_code == 0, hard.err);
  REQUIRE_MESSAGE(soft.exit_code == 0, soft.err);
  std::istringstream hard_lines(hard.out), soft_lines(soft.out);
  std::string h, j;
  int sentences = 0;
  while (std::getline(hard_lines, h) && std::getline(soft_lines, j)) {
    ++sentences;
    const nlohmann::json doc = nlohmann::json::parse(j);
    const std::vector<std::string> source = doc["source"], target = doc["target"];
    const std::vector<std::vector<double>> weights = doc["weights"];
    // words by hand: a piece starting with U+2581 starts a word
    auto word_of = [](const std::vector<std::string>& pieces) {
      std::vector<std::int64_t> of;
      std::int64_t word = -1;
      for (const std::string& p : pieces) {
        if (word < 0 || p.rfind("\xE2\x96\x81", 0) == 0) ++word;
        of.push_back(word);
      }
      return of;
    };
    const std::vector<std::int64_t> source_word = word_of(source);
    std::vector<std::string> output(target.begin(), target.end());
    if (!output.empty() && output.back() == "</s>") output.pop_back();
    const std::vector<std::int64_t> output_word = word_of(output);
    std::set<std::pair<std::int64_t, std::int64_t>> expected;
    for (std::size_t t = 0; t < output.size(); ++t) {
      const std::size_t best = static_cast<std::size_t>(
          std::max_element(weights[t].begin(), weights[t].end()) - weights[t].begin());
      expected.insert({source_word[best], output_word[t]});
    }
    std::set<std::pair<std::int64_t, std::int64_t>> got;
    std::istringstream links(h.substr(h.find('\t') + 1));
    for (std::string link; links >> link;)
      got.insert({std::stoll(link.substr(0, link.find('-'))), std::stoll(link.substr(link.find('-') + 1))});
    CHECK(got == expected);
    CHECK(h.substr(0, h.find('\t')) == doc["translation"].get<std::string>());
  }
  CHECK(sentences == 2);
  // --replace-unk runs on pieces (no piece left as <unk>), and the average of a model with itself is the model
  const Result unk = attend_cli(s, {"translate", "--model", dir, "--replace-unk", "--quiet"}, input);
  CHECK_MESSAGE(unk.exit_code == 0, unk.err);
  CHECK(!contains(unk.out, "<unk>"));
  const Result avg = attend_cli(s, {"average", "--out", s.path("avg"), dir, dir});
  REQUIRE_MESSAGE(avg.exit_code == 0, avg.err);
  CHECK(fs::exists(s.path("avg") + "/subword.model"));
  CHECK(attend_cli(s, {"translate", "--model", s.path("avg"), "--quiet"}, input).out ==
        attend_cli(s, {"translate", "--model", dir, "--quiet"}, input).out);
}
