// attend translate: what is printed for one sentence.
//   default            the translation
//   --show-attention   the translation, then its attention drawn as text
//   --alignments hard  TRANSLATION<TAB>ALIGNMENT, Moses/fast_align "i-j" word pairs
//   --alignments soft  one JSON object: the tokens of both sides and the weights
//   --n-best K         K lines in Moses n-best format
// and the decoding flags translate and eval share.
#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/io/limits.hpp"
#include "tools/cli/checks.hpp"
#include "tools/cli/terminal.hpp"
#include "tools/cli/translate.hpp"

namespace attend::tools {

namespace {

// The output tokens, with "</s>" when the attention has a row for it.
std::vector<std::string> attention_rows(const TextTranslation& t) {
  std::vector<std::string> rows = t.output_tokens;
  if (t.attention.size() > rows.size()) rows.push_back("</s>");
  return rows;
}

std::string soft_alignment(const TextTranslation& t) {
  nlohmann::json j;
  j["translation"] = t.text;
  j["source"] = t.source_tokens;
  j["target"] = attention_rows(t);
  j["weights"] = t.attention;  // [target token][source token]
  return j.dump();
}

}  // namespace

void replace_unknown_words(TextTranslation& t, const UnkDictionary& dictionary, const TextCodec& target) {
  if (std::find(t.output_tokens.begin(), t.output_tokens.end(), "<unk>") == t.output_tokens.end()) return;
  const std::vector<std::string> pieces = t.output_tokens;  // as decoded, for re-joining subword text
  const std::vector<UnkReplacement> done =
      replace_unknown(t.output_tokens, t.attention, t.source_words, t.source_word_of, dictionary);
  if (!target.is_subword()) {
    t.text = target.decode(t.output_tokens);
  } else {
    // SentencePiece would decode a word it does not have as " ⁇ ", so the text is
    // joined here: each piece's U+2581 is a space, and a replaced <unk> that
    // started a word gets one.
    std::string text;
    std::size_t next = 0;
    for (std::size_t i = 0; i < pieces.size(); ++i) {
      const bool replaced = next < done.size() && static_cast<std::size_t>(done[next].target) == i;
      const bool starts_word = replaced ? i == 0 || t.output_word_of[i] != t.output_word_of[i - 1]
                                        : pieces[i].rfind("\u2581", 0) == 0;
      if (starts_word && !text.empty()) text += ' ';
      text += replaced ? done[next++].replacement : target.decode({pieces[i]});
    }
    t.text = text;
  }
  const WordMap words = target.words(t.output_tokens, t.text);
  t.output_words = words.words;
  t.output_word_of = words.word_of;
}

std::string hard_links(const TextTranslation& t) {
  return t.attention.empty() ? std::string()
                             : format_alignment(hard_alignment(t.attention, static_cast<std::int64_t>(t.output_tokens.size()),
                                                               t.source_word_of, t.output_word_of));
}

std::string format_output(const std::vector<TextTranslation>& n_best, std::int64_t line_index, const TranslateFlags& f) {
  const TextTranslation& t = n_best.front();
  auto links = [](const TextTranslation& h) { return hard_links(h); };
  if (f.decode.n_best > 1) {  // Moses: INDEX ||| TEXT ||| FEATURES ||| SCORE [||| ALIGNMENT]
    std::string out;
    for (const TextTranslation& h : n_best) {
      Hypothesis scores;
      scores.log_prob = h.log_prob;
      scores.score = h.score;
      scores.length_penalty = h.length_penalty;
      scores.coverage_penalty = h.coverage_penalty;
      out += nbest_line(line_index, h.text, scores);
      if (f.alignments == "hard") out += " ||| " + links(h);
      out += "\n";
    }
    return out;
  }
  if (f.alignments == "soft") return soft_alignment(t) + "\n";
  if (f.alignments == "hard") return fmt::format("{}\t{}\n", t.text, links(t));
  std::string out = t.text + "\n";
  if (f.show_attention && !t.attention.empty()) {
    std::vector<std::string> rows = t.output_tokens;
    rows.push_back("</s>");
    std::vector<std::vector<double>> weights = t.attention;
    weights.resize(rows.size(), std::vector<double>(t.source_tokens.size(), 0.0));
    out += attention_text(t.source_tokens, rows, weights, f.ascii) + "\n";
  }
  return out;
}

DecodeOptions DecodeFlags::options() const {
  if (n_best > beam) fail("--n-best {} needs --beam of at least {} (the beam holds the hypotheses), got {}", n_best, n_best, beam);
  if (coverage > 0 && beam == 1)
    fail("--coverage-penalty ranks the hypotheses of a beam search; give --beam K with K > 1");
  DecodeOptions o;
  o.beam = beam;
  o.n_best = n_best;
  o.length_penalty = parse_length_penalty(length_penalty);
  o.length_alpha = alpha;
  o.coverage_beta = coverage;
  o.scores = n_best > 1;  // only the n-best lines show them
  return o;
}

void add_decode_flags(CLI::App* cmd, DecodeFlags& f, bool n_best) {
  cmd->add_option("--beam", f.beam, "Beam size (1: greedy)")
      ->check(check::integer(1, limits::kMaxBeam, true))
      ->capture_default_str();
  if (n_best)
    cmd->add_option("--n-best", f.n_best,
                    "Print the K best hypotheses of each sentence (needs --beam >= K) in Moses n-best format, "
                    "'INDEX ||| TEXT ||| LogProb= .. LengthPenalty= .. CoveragePenalty= .. ||| SCORE', INDEX the input "
                    "line from 0; with --alignments hard a fifth field holds the alignment")
        ->check(check::integer(1, limits::kMaxBeam, true))
        ->type_name("K");
  cmd->add_option("--length-penalty", f.length_penalty,
                  "How beam search compares hypotheses of different lengths: average (log p / |Y|^alpha), gnmt "
                  "(log p / ((5 + |Y|) / 6)^alpha, Wu et al. 2016) or none (log p)")
      ->check(CLI::IsMember({"average", "gnmt", "none"}))
      ->capture_default_str();
  cmd->add_option("--alpha", f.alpha, "The length penalty's alpha")->check(check::number(0, 10))->capture_default_str();
  cmd->add_option("--coverage-penalty", f.coverage,
                  "beta of the GNMT coverage penalty, beta * sum_i log(min(sum_j alpha_ji, 1)), added to the score "
                  "of a beam's hypotheses: it favours translations that attend to every source word (0: off)")
      ->check(check::number(0, 10))
      ->type_name("BETA")
      ->capture_default_str();
}

}  // namespace attend::tools
