// attend translate's output formats and streaming, end to end on small models:
// --alignments hard|soft, --replace-unk with --unk-dict, ensembles (--model
// twice), chunked translation in input order, and the errors of each.
#include <doctest/doctest.h>

#include <cmath>
#include <regex>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/io/file_io.hpp"
#include "core/io/limits.hpp"
#include "models/decode/alignment.hpp"
#include "tests/support/translate_cli.hpp"
#include "tools/cli/translate.hpp"

using namespace attend;
using attend::testing::lines_of;
using attend::testing::run_translate;
using attend::testing::Scratch;
using attend::testing::words_of;
using attend::testing::write_model;

namespace {

const char* kSources =
    "the red car sleeps\n"
    "a small dog sees the cat\n"
    "the cat\n"
    "\n"
    "the big house near the river sleeps\n";

// <unk> wins every step: the model's vocabulary forces it.
void always_unk(Seq2Seq& model, const Vocabulary&) { model.project.bias.data<float>()[Vocabulary::kUnk] = 100.0f; }

}  // namespace

TEST_CASE("--alignments hard: TRANSLATION<TAB>ALIGNMENT, one link per output word, from the soft weights") {
  const Scratch scratch("attend-test-translate-align");
  const std::string dir = scratch.dir.string();
  write_model(dir + "/m", AttentionKind::Additive);
  write_file_atomic(dir + "/in.txt", kSources);
  const std::vector<std::string> plain = lines_of(run_translate({"--model", dir + "/m", "--quiet", dir + "/in.txt"}));
  const std::vector<std::string> hard =
      lines_of(run_translate({"--model", dir + "/m", "--alignments", "hard", "--quiet", dir + "/in.txt"}));
  const std::vector<std::string> soft =
      lines_of(run_translate({"--model", dir + "/m", "--alignments", "soft", "--quiet", dir + "/in.txt"}));
  const std::vector<std::string> sources = lines_of(kSources);
  REQUIRE(hard.size() == sources.size());
  REQUIRE(soft.size() == sources.size());
  const std::regex link("([0-9]+)-([0-9]+)");
  for (std::size_t i = 0; i < sources.size(); ++i) {
    CAPTURE(sources[i]);
    const std::size_t tab = hard[i].find('\t');
    REQUIRE(tab != std::string::npos);
    CHECK(hard[i].substr(0, tab) == plain[i]);  // the translation is unchanged
    const nlohmann::json j = nlohmann::json::parse(soft[i]);
    CHECK(j["translation"] == plain[i]);
    const std::vector<std::string> source = j["source"], target = j["target"];
    const std::vector<std::vector<double>> weights = j["weights"];
    CHECK(source == words_of(sources[i]));
    REQUIRE(weights.size() == target.size());
    for (const auto& row : weights) {
      REQUIRE(row.size() == source.size());
      double total = 0;
      for (double w : row) total += w;
      CHECK(total == doctest::Approx(1.0).epsilon(1e-5));
    }
    // the hard links are the soft weights' row maxima, word for word (words
    // model: tokens are words), each output word once
    const std::vector<std::string> output = words_of(plain[i]);
    std::vector<AlignmentLink> expected;
    for (std::size_t t = 0; t < output.size(); ++t)
      expected.push_back({most_attended(weights, static_cast<std::int64_t>(t)), static_cast<std::int64_t>(t)});
    std::vector<AlignmentLink> got;
    const std::string links = hard[i].substr(tab + 1);
    for (auto it = std::sregex_iterator(links.begin(), links.end(), link); it != std::sregex_iterator(); ++it)
      got.push_back({std::stoll((*it)[1]), std::stoll((*it)[2])});
    CHECK(got == expected);
    CHECK(format_alignment(got) == links);
    if (sources[i].empty()) CHECK(hard[i] == "\t");
  }
}

TEST_CASE("--replace-unk: a model whose vocabulary forces <unk> copies or translates the attended source word") {
  const Scratch scratch("attend-test-translate-unk");
  const std::string dir = scratch.dir.string();
  write_model(dir + "/m", AttentionKind::Additive, 7, always_unk);
  write_file_atomic(dir + "/in.txt", "the red car sleeps\n");
  write_file_atomic(dir + "/dict.txt", "car voiture 0.9\ncar auto 0.1\nred rouge\n");
  const std::string raw = run_translate({"--model", dir + "/m", "--quiet", dir + "/in.txt"});
  CHECK(words_of(raw) == std::vector<std::string>(words_of(raw).size(), "<unk>"));
  CHECK(words_of(raw).size() == 11);  // never </s>: 1.5 * 4 + 5 tokens

  const nlohmann::json soft = nlohmann::json::parse(
      run_translate({"--model", dir + "/m", "--replace-unk", "--alignments", "soft", "--quiet", dir + "/in.txt"}));
  const std::vector<std::string> source = soft["source"], target = soft["target"];
  const std::vector<std::vector<double>> weights = soft["weights"];
  REQUIRE(target.size() == 11);
  for (std::size_t t = 0; t < target.size(); ++t)
    CHECK(target[t] == source[static_cast<std::size_t>(most_attended(weights, static_cast<std::int64_t>(t)))]);
  CHECK(soft["translation"] == [&] {
    std::string text;
    for (const std::string& w : target) text += (text.empty() ? "" : " ") + w;
    return text;
  }());

  const std::string translated =
      run_translate({"--model", dir + "/m", "--replace-unk", "--unk-dict", dir + "/dict.txt", "--quiet", dir + "/in.txt"});
  const std::vector<std::string> words = words_of(translated);
  REQUIRE(words.size() == target.size());
  for (std::size_t t = 0; t < words.size(); ++t) {
    const std::string expected = target[t] == "car" ? "voiture" : target[t] == "red" ? "rouge" : target[t];
    CHECK(words[t] == expected);
  }
}

TEST_CASE("--replace-unk and --alignments need attention, --unk-dict needs --replace-unk") {
  const Scratch scratch("attend-test-translate-unk-errors");
  const std::string dir = scratch.dir.string();
  write_model(dir + "/none", AttentionKind::None);
  write_file_atomic(dir + "/in.txt", "the cat\n");
  CHECK_THROWS_WITH_AS(run_translate({"--model", dir + "/none", "--replace-unk", dir + "/in.txt"}),
                       ("translate: --replace-unk needs a model with attention; " + dir + "/none has none").c_str(),
                       Error);
  CHECK_THROWS_WITH_AS(run_translate({"--model", dir + "/none", "--alignments", "hard", dir + "/in.txt"}),
                       ("translate: --alignments needs a model with attention; " + dir + "/none has none").c_str(),
                       Error);
  CHECK_THROWS_AS(run_translate({"--model", dir + "/none", "--unk-dict", dir + "/in.txt", dir + "/in.txt"}),
                  CLI::ParseError);
  CHECK_THROWS_AS(run_translate({"--model", dir + "/none", "--alignments", "fuzzy", dir + "/in.txt"}), CLI::ParseError);
}

TEST_CASE("an ensemble of a model with itself translates as the model does, other vocabularies are refused") {
  const Scratch scratch("attend-test-translate-ensemble");
  const std::string dir = scratch.dir.string();
  write_model(dir + "/m", AttentionKind::Dot);
  write_file_atomic(dir + "/in.txt", kSources);
  for (const char* beam : {"1", "3"}) {
    CAPTURE(beam);
    const std::string alone = run_translate({"--model", dir + "/m", "--beam", beam, "--quiet", dir + "/in.txt"});
    const std::string twice =
        run_translate({"--model", dir + "/m", "--model", dir + "/m", "--beam", beam, "--quiet", dir + "/in.txt"});
    CHECK(twice == alone);
    CHECK(lines_of(alone).size() == lines_of(kSources).size());
  }
  // another target vocabulary: the same model with one target token renamed
  write_model(dir + "/m", AttentionKind::Dot);
  std::string vocab = read_file(dir + "/m/target.vocab");
  const std::size_t last = vocab.rfind('\n', vocab.size() - 2);
  write_file_atomic(dir + "/other.vocab", vocab.substr(0, last + 1) + "zzz-renamed\n");
  std::filesystem::copy(dir + "/m", dir + "/renamed", std::filesystem::copy_options::recursive);
  std::filesystem::copy_file(dir + "/other.vocab", dir + "/renamed/target.vocab",
                             std::filesystem::copy_options::overwrite_existing);
  const std::vector<std::string> tokens = lines_of(vocab);
  CHECK_THROWS_WITH_AS(
      run_translate({"--model", dir + "/m", "--model", dir + "/renamed", dir + "/in.txt"}),
      fmt::format("translate: {0}/renamed: target.vocab line {1} (token {2}) is 'zzz-renamed', {0}/m's is '{3}'; an "
                  "ensemble's models must share their target side and read the source alike",
                  dir, tokens.size(), tokens.size() - 1, tokens.back())
          .c_str(),
      Error);
  // a target vocabulary of one token more (and a model made for it)
  const LoadedModel m = load_model_dir(dir + "/m");
  Seq2SeqConfig bigger = m.config;
  bigger.target_vocab += 1;
  Generator init(7);
  Seq2Seq model(bigger, init);
  std::vector<std::string> more = tokens;
  more.push_back("zzz-added");
  save_model_description(dir + "/bigger", bigger, m.source_vocab, Vocabulary::from_tokens(more), TokenizerOptions{});
  nn::save(model, path_in(dir + "/bigger", "model.safetensors"));
  CHECK_THROWS_WITH_AS(run_translate({"--model", dir + "/m", "--model", dir + "/bigger", dir + "/in.txt"}),
                       doctest::Contains(fmt::format("translate: {0}/bigger: target.vocab has {1} tokens, {0}/m's has {2};",
                                                     dir, tokens.size() + 1, tokens.size())
                                             .c_str()),
                       Error);
}

TEST_CASE("an ensemble whose target sides are read by other SentencePiece models is refused, not decoded into garbage") {
  const Scratch scratch("attend-test-translate-ensemble-subword");
  const std::string dir = scratch.dir.string();
  write_file_atomic(dir + "/in.txt", kSources);
  std::vector<std::string> text;
  ToyCorpusOptions o;
  o.n = 80;
  o.max_len = 10;
  for (const ToySentence& s : toy_corpus(o)) text.push_back(fmt::format("{} {}", fmt::join(s.source, " "), fmt::join(s.target, " ")));
  SubwordTrainOptions options;
  options.vocab_size = 60;
  options.character_coverage = 1.0;
  auto unigram = std::make_shared<const SubwordModel>(SubwordModel::train(text, options));
  options.type = "bpe";
  auto bpe = std::make_shared<const SubwordModel>(SubwordModel::train(text, options));
  // Two models of the same vocabularies and weights: a joint subword model, and
  // one whose target side is read by another model.
  for (const auto& [name, target] : {std::pair{"/joint", unigram}, std::pair{"/other", bpe}}) {
    write_model(dir + name, AttentionKind::Dot);
    const LoadedModel m = load_model_dir(dir + name);
    save_model_description(dir + name, m.config, m.source_vocab, m.target_vocab,
                           TextCodecs{TextCodec(unigram, {}), TextCodec(target, {})});
  }
  CHECK(lines_of(run_translate({"--model", dir + "/joint", "--model", dir + "/joint", "--quiet", dir + "/in.txt"})).size() ==
        lines_of(kSources).size());
  CHECK_THROWS_WITH_AS(
      run_translate({"--model", dir + "/joint", "--model", dir + "/other", dir + "/in.txt"}),
      fmt::format("translate: {0}/other: the target side is read by another SentencePiece model than {0}/joint's; an "
                  "ensemble's models must share their target side and read the source alike",
                  dir)
          .c_str(),
      Error);
  // A line of pieces within the byte limit, too many to decode (issue 40): refused
  // once the subword model has cut it, before any decoding.
  std::string line;
  while (line.size() < static_cast<std::size_t>(limits::kMaxLineBytes)) line += text[line.size() % text.size()] + " ";
  line.resize(line.rfind(' ', static_cast<std::size_t>(limits::kMaxLineBytes) - 1));  // whole words, within the limit
  write_file_atomic(dir + "/long.txt", "the cat\n" + line + "\n");
  const std::int64_t pieces = static_cast<std::int64_t>(unigram->encode(line).size());
  REQUIRE(pieces > 12000);
  CHECK_THROWS_WITH_AS(run_translate({"--model", dir + "/joint", dir + "/long.txt"}),
                       doctest::Contains(fmt::format("translate: {}/long.txt:2: a source of {} tokens would take about",
                                                     dir, pieces)
                                             .c_str()),
                       Error);
}

TEST_CASE("a large input is translated chunk by chunk, in batches sorted by length, and written in input order") {
  const Scratch scratch("attend-test-translate-stream");
  const std::string dir = scratch.dir.string();
  write_model(dir + "/m", AttentionKind::Additive);
  // more lines than one chunk (4096), of varied lengths, repeating a few sentences
  const std::vector<std::string> sources = lines_of(kSources);
  std::string input;
  std::vector<std::string> expected_source;
  for (int i = 0; i < 5000; ++i) {
    const std::string& s = sources[static_cast<std::size_t>((i * 7) % static_cast<int>(sources.size()))];
    input += s + "\n";
    expected_source.push_back(s);
  }
  write_file_atomic(dir + "/big.txt", input);
  write_file_atomic(dir + "/small.txt", kSources);
  const std::vector<std::string> one_by_one = lines_of(run_translate({"--model", dir + "/m", "--batch", "1", "--quiet", dir + "/small.txt"}));
  REQUIRE(one_by_one.size() == sources.size());
  const std::vector<std::string> out = lines_of(run_translate({"--model", dir + "/m", "--batch", "37", "--quiet", dir + "/big.txt"}));
  REQUIRE(out.size() == expected_source.size());
  for (std::size_t i = 0; i < out.size(); ++i) {
    const std::size_t k = static_cast<std::size_t>((static_cast<int>(i) * 7) % static_cast<int>(sources.size()));
    if (out[i] != one_by_one[k]) {
      FAIL_CHECK("line " << i + 1 << ": '" << out[i] << "', alone: '" << one_by_one[k] << "'");
      break;
    }
  }
  // the same from standard input
  CHECK(lines_of(run_translate({"--model", dir + "/m", "--quiet"}, &input)) == out);
}

TEST_CASE("a bad line: a file is refused before anything is translated, stdin says what was written") {
  const Scratch scratch("attend-test-translate-bad-line");
  const std::string dir = scratch.dir.string();
  write_model(dir + "/m", AttentionKind::Additive);
  std::string input;
  for (int i = 0; i < 5000; ++i) input += "the cat\n";
  input += "caf\xc3 au lait\n";
  write_file_atomic(dir + "/bad.txt", input);
  CHECK_THROWS_WITH_AS(run_translate({"--model", dir + "/m", "--quiet", dir + "/bad.txt"}),
                       ("translate: " + dir + "/bad.txt:5001: invalid UTF-8 at byte 3 (from 0); nothing was translated").c_str(),
                       Error);
  // from stdin the first chunk (4096 lines) is already written when line 5001 is read
  CHECK_THROWS_WITH_AS(run_translate({"--model", dir + "/m", "--quiet"}, &input),
                       "translate: <stdin>:5001: invalid UTF-8 at byte 3 (from 0); the 4096 lines before it were translated",
                       Error);
  const std::string crlf = "the cat\r\nthe red car\r\n";
  CHECK(lines_of(run_translate({"--model", dir + "/m", "--quiet"}, &crlf)).size() == 2);
}

TEST_CASE("--n-best K: Moses n-best lines that parse, best first, the first being the 1-best translation") {
  const Scratch scratch("attend-test-translate-nbest");
  const std::string dir = scratch.dir.string();
  write_model(dir + "/m", AttentionKind::Additive);
  write_file_atomic(dir + "/in.txt", kSources);
  const std::vector<std::string> sources = lines_of(kSources);
  const std::regex line(R"(^([0-9]+) \|\|\| (.*) \|\|\| LogProb= (\S+) LengthPenalty= (\S+) CoveragePenalty= (\S+) \|\|\| (\S+)( \|\|\| ([0-9 -]*))?$)");
  for (const char* penalty : {"average", "gnmt"}) {
    CAPTURE(penalty);
    const std::vector<std::string> best = lines_of(run_translate(
        {"--model", dir + "/m", "--beam", "4", "--length-penalty", penalty, "--quiet", dir + "/in.txt"}));
    const std::vector<std::string> hard = lines_of(run_translate({"--model", dir + "/m", "--beam", "4",
                                                                  "--length-penalty", penalty, "--alignments", "hard",
                                                                  "--quiet", dir + "/in.txt"}));
    const std::vector<std::string> out =
        lines_of(run_translate({"--model", dir + "/m", "--beam", "4", "--n-best", "3", "--length-penalty", penalty,
                                "--alignments", "hard", "--quiet", dir + "/in.txt"}));
    REQUIRE(best.size() == sources.size());
    std::vector<std::vector<std::smatch>> by_sentence(sources.size());
    std::vector<std::smatch> matches(out.size());
    for (std::size_t i = 0; i < out.size(); ++i) {
      INFO(out[i]);
      REQUIRE(std::regex_match(out[i], matches[i], line));
      const std::size_t index = std::stoul(matches[i][1]);
      REQUIRE(index < sources.size());
      by_sentence[index].push_back(matches[i]);
    }
    for (std::size_t s = 0; s < sources.size(); ++s) {
      CAPTURE(sources[s]);
      REQUIRE(!by_sentence[s].empty());
      CHECK(by_sentence[s].size() <= 3);
      if (!sources[s].empty()) CHECK(by_sentence[s].size() == 3);  // the toy vocabulary has far more than 3 words
      CHECK(by_sentence[s][0][2].str() == best[s]);  // the best line is the 1-best translation
      CHECK(by_sentence[s][0][2].str() + "\t" + by_sentence[s][0][8].str() == hard[s]);
      double previous = INFINITY;
      for (const std::smatch& m : by_sentence[s]) {
        const double log_prob = std::stod(m[3]), lp = std::stod(m[4]), cp = std::stod(m[5]), score = std::stod(m[6]);
        CHECK(score <= previous);  // best first
        previous = score;
        CHECK(score == doctest::Approx(log_prob / lp + cp));
      }
    }
  }
  CHECK_THROWS_WITH_AS(run_translate({"--model", dir + "/m", "--n-best", "3", dir + "/in.txt"}),
                       "--n-best 3 needs --beam of at least 3 (the beam holds the hypotheses), got 1", Error);
  CHECK_THROWS_WITH_AS(
      run_translate({"--model", dir + "/m", "--beam", "3", "--n-best", "3", "--alignments", "soft", dir + "/in.txt"}),
      "translate: --n-best prints Moses n-best lines; it does not combine with --alignments soft", Error);
}

TEST_CASE("an ensemble of two different models is neither of them, and decodes every sentence") {
  const Scratch scratch("attend-test-translate-ensemble-two");
  const std::string dir = scratch.dir.string();
  write_model(dir + "/a", AttentionKind::Additive, 7);
  write_model(dir + "/b", AttentionKind::Additive, 8);  // same vocabularies, other weights
  write_file_atomic(dir + "/in.txt", kSources);
  const std::string a = run_translate({"--model", dir + "/a", "--beam", "3", "--n-best", "3", "--quiet", dir + "/in.txt"});
  const std::string b = run_translate({"--model", dir + "/b", "--beam", "3", "--n-best", "3", "--quiet", dir + "/in.txt"});
  const std::string ab = run_translate(
      {"--model", dir + "/a", "--model", dir + "/b", "--beam", "3", "--n-best", "3", "--quiet", dir + "/in.txt"});
  CHECK(ab != a);
  CHECK(ab != b);
  CHECK(lines_of(ab).size() >= lines_of(kSources).size());
}

TEST_CASE("a config.json promising a larger model than its weights file is refused before the model is built") {
  // Found by fuzz_config (tests/fuzz/regressions/config/embed_55594_small_weights):
  // the model was built, every parameter allocated and initialised, before the
  // weights file was found to be too small for it.
  const Scratch scratch("attend-test-translate-config-size");
  const std::string dir = scratch.dir.string();
  write_model(dir + "/m", AttentionKind::Additive);
  std::string config = read_file(dir + "/m/config.json");
  const std::size_t at = config.find("\"embed\": 8");
  REQUIRE(at != std::string::npos);
  config.replace(at, 10, "\"embed\": 55594");
  write_file_atomic(dir + "/m/config.json", config);
  write_file_atomic(dir + "/in.txt", "the cat\n");
  const std::uint64_t bytes = std::filesystem::file_size(dir + "/m/model.safetensors");
  Seq2SeqConfig c = Seq2SeqConfig::from_json(nlohmann::json::parse(config)["model"]);
  CHECK_THROWS_WITH_AS(
      run_translate({"--model", dir + "/m", dir + "/in.txt"}),
      fmt::format("{}/m: config.json describes a model of {} parameters, at least {} of weights, but {}/m/model.safetensors "
                  "has {} bytes",
                  dir, c.parameter_count(), limits::bytes_text(static_cast<std::uint64_t>(c.parameter_count()) * 4), dir,
                  bytes)
          .c_str(),
      Error);
}

TEST_CASE("--workers N decodes batches at once on copies of the models and prints what one worker prints") {
  const Scratch scratch("attend-test-translate-workers");
  const std::string dir = scratch.dir.string();
  write_model(dir + "/m", AttentionKind::Additive);
  // 200 lines of many lengths: with --batch 3, dozens of batches of different sizes.
  const std::vector<std::string> pieces = lines_of(kSources);
  std::string input;
  for (int i = 0; i < 200; ++i) {
    input += pieces[static_cast<std::size_t>(i) % pieces.size()];
    for (int k = 0; k < i % 7; ++k) input += " the cat";
    input += "\n";
  }
  write_file_atomic(dir + "/in.txt", input);
  for (const std::vector<std::string>& extra :
       {std::vector<std::string>{}, {"--beam", "3", "--n-best", "2"}, {"--alignments", "hard"},
        {"--model", dir + "/m"}}) {  // the last: an ensemble of the model with itself
    CAPTURE(fmt::format("{}", fmt::join(extra, " ")));
    std::vector<std::string> args = {"--model", dir + "/m", "--batch", "3", "--quiet", dir + "/in.txt"};
    args.insert(args.end(), extra.begin(), extra.end());
    const std::string one = run_translate(args);
    CHECK(lines_of(one).size() >= 200);
    for (const char* workers : {"2", "4"}) {
      std::vector<std::string> more = args;
      more.insert(more.end(), {"--workers", workers});
      CHECK(run_translate(more) == one);
    }
  }
  CHECK_THROWS_AS(run_translate({"--model", dir + "/m", "--workers", "0", dir + "/in.txt"}), CLI::ParseError);
  CHECK_THROWS_AS(run_translate({"--model", dir + "/m", "--workers", "x", dir + "/in.txt"}), CLI::ParseError);
}

TEST_CASE("--workers N is refused up front when its copies of the models would take half the memory") {
  // 3 more copies of 1 MB fit in 16 GB; of 3 GB (9 GB in all) they do not.
  CHECK_NOTHROW(tools::check_replica_memory(1'000'000, 3, 16'000'000'000));
  CHECK_THROWS_WITH_AS(tools::check_replica_memory(3'000'000'000, 3, 16'000'000'000),
                       doctest::Contains("translate: --workers 4 would load 3 more copies of the models (3000.0 MB "
                                         "each, 9.0 GB in all), more than half of this machine's memory (16.0 GB)"),
                       Error);
  CHECK_NOTHROW(tools::check_replica_memory(3'000'000'000, 0, 16'000'000'000));  // one worker: no copies
  CHECK_NOTHROW(tools::check_replica_memory(3'000'000'000, 3, 0));               // memory unknown
  CHECK_THROWS_WITH_AS(tools::check_replica_memory(3'000'000'000, 3, 16'000'000'000, "serve: --copies"),
                       doctest::Contains("serve: --copies 4 would load 3 more copies"), Error);
}
