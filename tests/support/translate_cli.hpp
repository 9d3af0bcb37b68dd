#pragma once
// `attend translate` run in-process on small models written to a scratch
// directory (tests/support/scratch.hpp): what test_explain_grad and test_translate_cli share.
#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "layers/serialize.hpp"
#include "models/model_dir.hpp"
#include "models/data/toy_language.hpp"
#include "tests/support/scratch.hpp"
#include "tools/cli/commands.hpp"

namespace attend::testing {

// The lines of a command's output, and the words of a line.
inline std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

inline std::vector<std::string> words_of(const std::string& line) {
  std::vector<std::string> out;
  std::istringstream in(line);
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

// An untrained model on the toy language (60 sentences of 3-6 words), with
// `tweak` applied to it before it is saved.
inline void write_model(const std::string& dir, AttentionKind attention, std::uint64_t seed = 7,
                        const std::function<void(Seq2Seq&, const Vocabulary&)>& tweak = {}) {
  ToyCorpusOptions o;
  o.n = 60;
  o.min_len = 3;
  o.max_len = 6;
  o.seed = 4;
  TokenCounts src, tgt;
  for (const ToySentence& s : toy_corpus(o)) {
    count_tokens(src, s.source);
    count_tokens(tgt, s.target);
  }
  Vocabulary source = Vocabulary::build(src), target = Vocabulary::build(tgt);
  Seq2SeqConfig c;
  c.source_vocab = source.size();
  c.target_vocab = target.size();
  c.embed = 8;
  c.hidden = 12;
  c.layers = 1;
  c.attention = attention;
  Generator init(seed);
  Seq2Seq model(c, init);
  if (tweak) tweak(model, target);
  save_model_description(dir, c, source, target, TokenizerOptions{});
  nn::save(model, path_in(dir, "model.safetensors"));
}

// Runs `attend translate ARGS` in this process and returns what it printed on
// stdout; `input`, when given, is its standard input.
inline std::string run_translate(std::vector<std::string> args, const std::string* input = nullptr) {
  CLI::App app;
  tools::add_translate_command(app);
  args.insert(args.begin(), {"attend", "translate"});
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  std::fflush(stdout);
  std::FILE* capture = std::tmpfile();
  REQUIRE(capture != nullptr);
  const int saved_out = ::dup(::fileno(stdout));
  ::dup2(::fileno(capture), ::fileno(stdout));
  int saved_in = -1;
  std::FILE* feed = nullptr;
  if (input != nullptr) {
    feed = std::tmpfile();
    REQUIRE(feed != nullptr);
    std::fwrite(input->data(), 1, input->size(), feed);
    std::fflush(feed);
    std::rewind(feed);
    saved_in = ::dup(::fileno(stdin));
    ::dup2(::fileno(feed), ::fileno(stdin));
    std::clearerr(stdin);
  }
  auto restore = [&] {
    std::fflush(stdout);
    ::dup2(saved_out, ::fileno(stdout));
    ::close(saved_out);
    if (feed != nullptr) {
      ::dup2(saved_in, ::fileno(stdin));
      ::close(saved_in);
      std::clearerr(stdin);
      std::fclose(feed);
    }
  };
  try {
    app.parse(static_cast<int>(argv.size()), argv.data());
  } catch (...) {
    restore();
    std::fclose(capture);
    throw;
  }
  restore();
  std::string out;
  std::rewind(capture);
  for (int ch; (ch = std::fgetc(capture)) != EOF;) out += static_cast<char>(ch);
  std::fclose(capture);
  return out;
}

}  // namespace attend::testing
