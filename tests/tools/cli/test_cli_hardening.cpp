// The command line against hostile input (issue 12: D3, D5, D8, D9, D10): each
// case runs `attend ...` as main() does, in a forked child with an alarm, so
// that an abort, a crash or a hang is a failed check rather than a dead test
// program, and checks the exit code and the message on stderr.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/io/limits.hpp"
#include "core/io/safetensors.hpp"
#include "layers/serialize.hpp"
#include "models/model_dir.hpp"
#include "models/data/toy_language.hpp"
#include "tests/support/cli_child.hpp"
#include "tools/cli/cli.hpp"

using namespace attend;
namespace fs = std::filesystem;

namespace {

using Result = attend::testing::CliResult;
using attend::testing::attend_cli;
using attend::testing::contains;
using attend::testing::Scratch;
using attend::testing::slurp;

// An error: a normal non-zero exit (no signal) with "attend: error: " and `part` on stderr.
void check_error(const Result& r, const std::string& part) {
  CHECK_MESSAGE(r.signal == 0, "killed by signal " << r.signal << "; stderr: " << r.err);
  CHECK(r.exit_code > 0);
  CHECK_MESSAGE(contains(r.err, "attend: error: "), r.err);
  CHECK_MESSAGE(contains(r.err, part), r.err);
}

// A tiny trained-shape model directory (untrained weights) to translate with.
std::string write_model(const Scratch& s, const std::string& name) {
  ToyCorpusOptions o;
  o.n = 40;
  o.min_len = 3;
  o.max_len = 5;
  TokenCounts src, tgt;
  for (const ToySentence& t : toy_corpus(o)) {
    count_tokens(src, t.source);
    count_tokens(tgt, t.target);
  }
  const Vocabulary source = Vocabulary::build(src), target = Vocabulary::build(tgt);
  Seq2SeqConfig c;
  c.source_vocab = source.size();
  c.target_vocab = target.size();
  c.embed = 4;
  c.hidden = 6;
  Generator init(1);
  Seq2Seq model(c, init);
  const std::string dir = s.path(name);
  save_model_description(dir, c, source, target, TokenizerOptions{});
  nn::save(model, path_in(dir, "model.safetensors"));
  return dir;
}

// config.json of `dir` with one change made by `edit`.
void edit_config(const std::string& dir, const std::function<void(nlohmann::json&)>& edit) {
  nlohmann::json j = nlohmann::json::parse(slurp(path_in(dir, "config.json")));
  edit(j);
  std::ofstream(path_in(dir, "config.json")) << j.dump(2);
}

}  // namespace

TEST_CASE("D3: an --out that cannot be a directory is an error, never an abort") {
  Scratch s;
  const std::string file = s.write("a_file", "x");
  const std::vector<std::string> toy = {"--toy", "--toy-n", "60", "--toy-max-len", "6", "--embed", "4", "--hidden", "4",
                                        "--epochs", "1", "--bleu-sentences", "0"};
  auto train = [&](const std::string& out) {
    std::vector<std::string> args = {"train", "--out", out};
    args.insert(args.end(), toy.begin(), toy.end());
    return attend_cli(s, args);
  };
  check_error(train(file), "--out: " + file + " exists and is not a directory");
  check_error(train(""), "--out: the directory name is empty");
  check_error(train("/proc/attend_x"), "/proc/attend_x: cannot create directories");
  check_error(train(file + "/below"), file + "/below: cannot create directories: Not a directory");
  check_error(attend_cli(s, {"experiment", "--out", file, "--quick"}), "--out: " + file + " exists and is not a directory");
}

TEST_CASE("D3: sizes are checked before anything is allocated") {
  Scratch s;
  check_error(attend_cli(s, {"train", "--toy", "--hidden", "1000000000"}),
              "--hidden: 1000000000 is not an integer in 1..65536 (the limit is in core/io/limits.hpp)");
  check_error(attend_cli(s, {"translate", "--beam", "1000000"}),
              "--beam: 1000000 is not an integer in 1..256 (the limit is in core/io/limits.hpp)");
  check_error(attend_cli(s, {"bench", "--vocab", "10000000", "--hidden", "1024"}),
              "Seq2SeqConfig: the model would have 10909158016 parameters, more than the limit of 268435456");
  check_error(attend_cli(s, {"train", "--data", "/dev/zero"}), "read_tsv: /dev/zero: not a regular file");

  const std::string model = write_model(s, "big");
  edit_config(model, [](nlohmann::json& j) { j["model"]["hidden"] = 30000; });
  check_error(attend_cli(s, {"translate", "--model", model}, "a\n"),
              "config.json: Seq2SeqConfig: the model would have");
}

TEST_CASE("D3: a line too long for translate or eval is refused, naming the line") {
  Scratch s;
  const std::string model = write_model(s, "m");
  const std::string huge(10'000'000, 'a');
  Result r = attend_cli(s, {"translate", "--model", model}, "the cat\n" + huge + "\n");
  check_error(r, "translate: <stdin>:2: the line has 10000000 bytes, more than the limit of 65536 (core/io/limits.hpp); "
                 "nothing was translated");
  CHECK(r.out.empty());
  const std::string file = s.write("long.txt", "ok\n" + huge + "\n");
  check_error(attend_cli(s, {"translate", "--model", model, file}), "translate: " + file + ":2: the line has");
  // eval skips it with a warning naming the line, like every unusable line of a TSV file.
  const std::string tsv = s.write("long.tsv", "the cat\tle chat\n" + huge + "\tx\n");
  r = attend_cli(s, {"eval", "--model", model, "--data", tsv});
  CHECK(r.exit_code == 0);
  CHECK_MESSAGE(contains(r.err, tsv + ":2: line longer than the limit of 65536 bytes (core/io/limits.hpp); line skipped"),
                r.err);
  CHECK(contains(r.out, "(1 sentences, beam 1)"));
}

TEST_CASE("issue 40: a line within the byte limit but too many tokens to decode is refused at once, naming the line") {
  Scratch s;
  const std::string model = write_model(s, "m");
  // 65536 bytes, 32768 one-letter words: it was decoded for 30-40 s, then ran
  // out of memory (an attention row over 32768 source tokens for each of up to
  // 49157 output tokens). It is refused after tokenizing, before any decoding
  // (the child's alarm is 20 s; the refusal takes well under a second).
  std::string line;
  while (line.size() < static_cast<std::size_t>(limits::kMaxLineBytes) - 1) line += "a ";
  line.resize(static_cast<std::size_t>(limits::kMaxLineBytes) - 1);
  line += "b";
  REQUIRE(line.size() == static_cast<std::size_t>(limits::kMaxLineBytes));
  const std::string file = s.write("many.txt", "the cat\n" + line + "\n");
  Result r = attend_cli(s, {"translate", "--model", model, file}, "", 20);
  check_error(r, "translate: " + file + ":2: a source of 32768 tokens would take about ");
  CHECK_MESSAGE(contains(r.err, "more than the limit of"), r.err);
  CHECK_MESSAGE(contains(r.err, "(limits::kMaxDecodeBytes, core/io/limits.hpp); sources of at most "), r.err);
  CHECK_MESSAGE(contains(r.err, " tokens fit; split the sentence; nothing was translated"), r.err);
  CHECK(r.out.empty());
  // On standard input the line's chunk is checked before any of it is translated.
  r = attend_cli(s, {"translate", "--model", model, "--beam", "4"}, "the cat\n" + line + "\n", 20);
  check_error(r, "translate: <stdin>:2: a source of 32768 tokens would take about ");
  CHECK_MESSAGE(contains(r.err, "(beam 4: up to 49157 output tokens, each with an attention row over the source)"), r.err);
  CHECK_MESSAGE(contains(r.err, "; nothing was translated"), r.err);
  CHECK(r.out.empty());
  // eval checks every pair's source before it decodes any.
  const std::string tsv = s.write("many.tsv", "the cat\tle chat\n" + line.substr(0, 60000) + "\tx\n");
  r = attend_cli(s, {"eval", "--model", model, "--data", tsv}, "", 20);
  check_error(r, "eval: " + tsv + ": sentence pair 2: a source of 30000 tokens would take about ");
  CHECK(r.out.empty());
  // A line of ordinary length still translates.
  r = attend_cli(s, {"translate", "--model", model, "--quiet"}, "the cat\n", 20);
  CHECK_MESSAGE(r.exit_code == 0, r.err);
  CHECK(!r.out.empty());
}

TEST_CASE("D3: data gettext refuses catalogs whose entries share one string") {
  Scratch s;
  fs::create_directories(s.dir / "locale" / "fr" / "LC_MESSAGES");
  std::string mo(20, '\0');
  auto put = [&](std::size_t at, std::uint32_t v) {
    if (mo.size() < at + 4) mo.resize(at + 4, '\0');
    for (int k = 0; k < 4; ++k) mo[at + k] = static_cast<char>((v >> (8 * k)) & 0xFF);
  };
  const std::uint32_t n = 1000, length = 50000, at = 28 + 16 * n;
  put(0, 0x950412de);
  put(8, n);
  put(12, 28);
  put(16, 28 + 8 * n);
  for (std::uint32_t i = 0; i < 2 * n; ++i) put(28 + 8 * i, length), put(28 + 8 * i + 4, at);
  mo += std::string(length, 'a') + '\0';
  s.write("locale/fr/LC_MESSAGES/shared.mo", mo);
  Result r = attend_cli(s, {"data", "gettext", s.path("locale")});
  check_error(r, "data gettext: " + s.path("locale") + "/fr/LC_MESSAGES: none of the 1 catalogs could be read");
  CHECK(contains(r.err, "warning: read_mo: "));
  CHECK(contains(r.err, "strings add up to 100000000 bytes, more than 4 times the file's"));
}

TEST_CASE("D5: bench refuses a negative warm-up instead of taking the median of nothing") {
  Scratch s;
  check_error(attend_cli(s, {"bench", "--warmup", "-5", "--steps", "1"}), "--warmup: -5 is not an integer in 0..1000000");
  check_error(attend_cli(s, {"bench", "--steps", "0"}), "--steps: 0 is not an integer in 1..1000000");
}

TEST_CASE("D8: limits on time, steps, layers and threads are flags' errors") {
  Scratch s;
  check_error(attend_cli(s, {"train", "--toy", "--minutes", "-1"}), "--minutes: -1 is not a finite number >= 0");
  check_error(attend_cli(s, {"train", "--toy", "--minutes", "nan"}), "--minutes: nan is not a finite number");
  check_error(attend_cli(s, {"train", "--toy", "--max-steps", "-5"}), "--max-steps: -5 is not an integer >= 0");
  check_error(attend_cli(s, {"train", "--toy", "--layers", "1000000"}),
              "--layers: 1000000 is not an integer in 1..64 (the limit is in core/io/limits.hpp)");
  check_error(attend_cli(s, {"train", "--toy", "--threads", "1000000"}),
              "--threads: 1000000 is not an integer in 1..256 (the limit is in core/io/limits.hpp)");
  check_error(attend_cli(s, {"bench", "--threads", "1000000"}), "--threads: 1000000 is not an integer in 1..256");
  check_error(attend_cli(s, {"translate", "--threads", "0"}), "--threads: 0 is not an integer in 1..256");
}

TEST_CASE("issue 40: a --seed outside the generator's 0..2^64-1 is refused by every command, never wrapped") {
  Scratch s;
  const std::string range = "is not an integer in 0..18446744073709551615 (the generator's seed is 64 bits)";
  const std::string huge = "1000000000000000000000000000000";  // 10^30
  const std::vector<std::vector<std::string>> commands = {{"explain"}, {"train", "--toy"}, {"data", "toy"}, {"bench"},
                                                          {"experiment"}};
  for (const std::vector<std::string>& command : commands) {
    CAPTURE(command.front());
    for (const std::string& seed : {huge, std::string("18446744073709551616"), std::string("-1"), std::string("1e3")}) {
      std::vector<std::string> args = command;
      args.insert(args.end(), {"--seed", seed});
      check_error(attend_cli(s, args), "--seed: " + seed + " " + range);
    }
  }
  check_error(attend_cli(s, {"train", "--toy", "--data-seed", huge}), "--data-seed: " + huge + " " + range);
  // The largest seed is the generator's own, and explain runs with it.
  const Result r = attend_cli(s, {"explain", "--seed", "18446744073709551615"});
  CHECK_MESSAGE(r.exit_code == 0, r.err);
  CHECK_FALSE(r.out.empty());
}

TEST_CASE("D8: inspect refuses a FIFO instead of waiting for a writer") {
  Scratch s;
  const std::string fifo = s.path("fifo");
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  check_error(attend_cli(s, {"inspect", fifo}, "", 20), "load_safetensors: " + fifo + ": not a regular file");
}

TEST_CASE("D9: wrong inputs that used to succeed are errors") {
  Scratch s;
  const std::string model = write_model(s, "m");
  // a directory to translate
  check_error(attend_cli(s, {"translate", "--model", model, s.dir.string()}), "translate: " + s.dir.string() +
                                                                                  ": not a regular file");
  // eval without a usable pair
  const std::string bad = s.write("bad.tsv", "no tab here\n\n");
  check_error(attend_cli(s, {"eval", "--model", model, "--data", bad}),
              "eval: " + bad + " has no usable 'source<TAB>target' lines (2 skipped): nothing to score");
  // every catalog corrupt
  fs::create_directories(s.dir / "loc" / "fr" / "LC_MESSAGES");
  s.write("loc/fr/LC_MESSAGES/a.mo", "not a catalog at all");
  check_error(attend_cli(s, {"data", "gettext", s.path("loc")}), "none of the 1 catalogs could be read");
  fs::create_directories(s.dir / "empty" / "fr" / "LC_MESSAGES");
  check_error(attend_cli(s, {"data", "gettext", s.path("empty")}), "no .mo catalogs found");
  // non-finite training numbers
  check_error(attend_cli(s, {"train", "--toy", "--lr", "inf"}), "--lr: inf is not a finite number > 0");
  check_error(attend_cli(s, {"train", "--toy", "--clip", "nan"}), "--clip: nan is not a finite number >= 0");
  check_error(attend_cli(s, {"train", "--toy", "--lr", "0"}), "--lr: 0 is not a finite number > 0");
}

TEST_CASE("D9: config.json dimensions must be integers and the format must be known") {
  Scratch s;
  const std::string model = write_model(s, "m");
  const std::string config = path_in(model, "config.json");
  CHECK(attend_cli(s, {"translate", "--model", model}, "the cat\n").exit_code == 0);
  edit_config(model, [](nlohmann::json& j) { j["model"]["embed"] = 8.5; });
  check_error(attend_cli(s, {"translate", "--model", model}, "a\n"), config + ": model.embed must be an integer, got 8.5");
  edit_config(model, [](nlohmann::json& j) {
    j["model"]["embed"] = 4;
    j["format"] = "attend-seq2seq-9";
  });
  check_error(attend_cli(s, {"translate", "--model", model}, "a\n"),
              config + ": format is 'attend-seq2seq-9'; this attend reads 'attend-seq2seq-1'");
  edit_config(model, [](nlohmann::json& j) { j.erase("format"); });
  check_error(attend_cli(s, {"translate", "--model", model}, "a\n"), config + ": format is missing");
}

TEST_CASE("D9: a vocabulary that is not UTF-8 is refused") {
  Scratch s;
  const std::string model = write_model(s, "m");
  std::string vocab = slurp(path_in(model, "target.vocab"));
  vocab.replace(vocab.find("</s>\n") + 5, 0, "caf\xe9\n");  // Latin-1, not UTF-8
  std::string lines = vocab;
  // Keep the size config.json expects: drop the last token.
  lines.erase(lines.rfind('\n', lines.size() - 2) + 1);
  std::ofstream(path_in(model, "target.vocab"), std::ios::binary) << lines;
  check_error(attend_cli(s, {"translate", "--model", model}, "a\n"), "Vocabulary: token 4 is not valid UTF-8");
  // nor one holding a control character, which a translation would print and an SVG could not hold
  lines.replace(lines.find("caf\xe9"), 4, "ca\x1b[m");
  std::ofstream(path_in(model, "target.vocab"), std::ios::binary) << lines;
  check_error(attend_cli(s, {"translate", "--model", model}, "a\n"), "Vocabulary: token 4 contains a control character");
}

TEST_CASE("D10: messages say what is wrong, readably") {
  Scratch s;
  // a readable range, not 309 digits
  Result r = attend_cli(s, {"train", "--toy", "--hidden", "0"});
  check_error(r, "--hidden: 0 is not an integer in 1..65536");
  CHECK(r.err.size() < 200);
  r = attend_cli(s, {"bench", "--embed", "0"});
  check_error(r, "--embed: 0 is not an integer in 1..65536");
  CHECK(r.err.size() < 200);

  const std::string model = write_model(s, "m");
  const std::string config = path_in(model, "config.json");
  // 1e300 reported as it is
  edit_config(model, [](nlohmann::json& j) { j["model"]["hidden"] = 1e300; });
  check_error(attend_cli(s, {"translate", "--model", model}, "a\n"), config + ": model.hidden must be an integer, got 1e+300");
  // a type error names the key and the file
  edit_config(model, [](nlohmann::json& j) { j["model"]["hidden"] = "6"; });
  check_error(attend_cli(s, {"translate", "--model", model}, "a\n"), config + ": model.hidden must be an integer, got \"6\"");
  edit_config(model, [](nlohmann::json& j) {
    j["model"]["hidden"] = 6;
    j["tokenizer"]["lowercase"] = "yes";
  });
  check_error(attend_cli(s, {"translate", "--model", model}, "a\n"),
              config + ": tokenizer.lowercase must be true or false, got \"yes\"");
  edit_config(model, [](nlohmann::json& j) {
    j["tokenizer"]["lowercase"] = false;
    j["model"].erase("layers");
  });
  check_error(attend_cli(s, {"translate", "--model", model}, "a\n"), config + ": model.layers is missing");
  edit_config(model, [](nlohmann::json& j) { j["model"]["layers"] = 1; });

  // a CRLF vocabulary shows its CR
  const std::string vocab_path = path_in(model, "source.vocab");
  std::string vocab = slurp(vocab_path), crlf;
  for (char c : vocab) crlf += c == '\n' ? std::string("\r\n") : std::string(1, c);
  std::ofstream(vocab_path, std::ios::binary) << crlf;
  check_error(attend_cli(s, {"translate", "--model", model}, "a\n"), "Vocabulary: token 0 must be '<pad>', got '<pad>\\r'");
  std::ofstream(vocab_path, std::ios::binary) << vocab;

  // a bad line on stdin is named, and nothing is translated
  r = attend_cli(s, {"translate", "--model", model}, "the cat\nthe \xff dog\nthe end\n");
  check_error(r, "translate: <stdin>:2: invalid UTF-8 at byte 4 (from 0); nothing was translated");
  CHECK(r.out.empty());
  // --model FILE
  const std::string file = s.write("weights.safetensors", "x");
  check_error(attend_cli(s, {"translate", "--model", file}, "a\n"),
              file + ": not a model directory (it is not a directory; --model takes the directory attend train wrote)");
  check_error(attend_cli(s, {"translate", "--model", s.path("nowhere")}, "a\n"), "not a model directory (it does not exist)");
}

TEST_CASE("D10: inspect shows tensor names with escapes, never raw terminal control") {
  Scratch s;
  const std::string path = s.path("names.safetensors");
  save_safetensors(path, {{"\x1b[31mred\x1b[0m", zeros({2})}, {"plain", zeros({1})}}, {{"note", "\x1b]0;title\x07"}});
  Result r = attend_cli(s, {"inspect", path});
  CHECK(r.exit_code == 0);
  CHECK_MESSAGE(r.out.find('\x1b') == std::string::npos, r.out);
  CHECK_MESSAGE(r.out.find('\x07') == std::string::npos, r.out);
  CHECK(contains(r.out, "\\x1b[31mred\\x1b[0m"));
  CHECK(contains(r.out, "plain"));
}
