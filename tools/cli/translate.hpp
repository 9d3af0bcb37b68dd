#pragma once
// attend translate, shared between its files: cmd_translate.cpp (flags and the
// streaming loop), translate_output.cpp (what is printed for a sentence) and
// translate_explain.cpp (--explain-grad). attend serve (tools/serve/) translates
// and explains through the same functions.
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "models/decode/alignment.hpp"
#include "models/eval/evaluation.hpp"
#include "models/model_dir.hpp"

namespace attend::tools {

// The decoding flags translate and eval share: --beam, --n-best (translate),
// --length-penalty, --alpha, --coverage-penalty.
struct DecodeFlags {
  std::int64_t beam = 1, n_best = 1;
  std::string length_penalty = "average";
  double alpha = 0.6, coverage = 0.0;
  DecodeOptions options() const;  // checked: n_best <= beam, coverage needs a beam; scores only for n-best lines
};
void add_decode_flags(CLI::App* cmd, DecodeFlags& f, bool n_best);

struct TranslateFlags {
  std::vector<std::string> models{"model"};  // several: an ensemble
  std::string input;
  DecodeFlags decode;
  std::int64_t batch = 64;
  std::string alignments;  // "", "soft" or "hard"
  bool replace_unk = false;
  std::string unk_dict;
  bool show_attention = false, ascii = false, explain_grad = false, quiet = false;
  std::string svg_prefix;  // with explain_grad: also write PREFIX_N.svg
  int threads = 1;
  int workers = 1;  // --workers: batches decoded at once, by copies of the models
};

// What translate prints for one input line (line_index from 0), newline
// included: its best translation, or with --n-best its n-best list.
std::string format_output(const std::vector<TextTranslation>& n_best, std::int64_t line_index, const TranslateFlags& f);

// --alignments hard: the translation's Moses/fast_align "i-j" word pairs ("" without attention).
std::string hard_links(const TextTranslation& t);

// --replace-unk: each <unk> of the output becomes the translation of the source
// word it attends to most; the text is rebuilt from the new tokens.
void replace_unknown_words(TextTranslation& t, const UnkDictionary& dictionary, const TextCodec& target);

// translate's flags and their checks (add_translate_command adds them with its
// callback; the Python module's Translator parses its arguments through them).
void add_translate_flags(CLI::App* cmd, TranslateFlags& f);

// The models of --model, each checked before the next loads (an ensemble must agree).
std::vector<LoadedModel> load_models(const TranslateFlags& f);
// Throws when the flags ask what the models cannot give (--alignments of a model
// without attention, --n-best with --show-attention, ...).
void check_translate_request(const std::vector<LoadedModel>& models, const TranslateFlags& f);

// The models as decoding takes them.
std::vector<Seq2Seq*> ensemble_of(std::vector<LoadedModel>& models);

// --workers N: `first` (load_models) and N - 1 more copies of it, loaded at
// once; decoding keeps its state on a model, so each worker needs its own.
// Refused up front when the copies would take more than half the machine's
// memory (check_replica_memory); the batches' decoding memory is bounded apart.
// `flag` names the flag in the error (translate's "--workers", serve's "--copies").
std::vector<std::vector<LoadedModel>> load_replicas(const TranslateFlags& f, std::vector<LoadedModel> first,
                                                    const char* flag = "translate: --workers");
// Throws unless `more` copies of `bytes` each fit in half of `physical` bytes
// (physical 0: unknown, nothing refused).
void check_replica_memory(std::uint64_t bytes, int more, std::uint64_t physical,
                          const char* flag = "translate: --workers");

// The memory a line's decoding takes grows with the square of its tokens
// (models/decode/decoding.hpp): it is checked once the line is tokenized,
// before any work, against limits::decode_memory_limit(); an error names `op`
// and `where`. Returns the tokens.
std::int64_t checked_tokens(const char* op, std::span<Seq2Seq* const> ensemble, const TextCodec& source,
                            const std::string& line, const std::string& where, const DecodeOptions& options);

// Translates lines (their tokens from checked_tokens) in batches of similar
// length (less padding) of at most f.batch lines, each batch within the memory
// limit, and returns the n-best lists in input order. With several copies of
// the models (replicas, each an ensemble as load_models gives it; --workers)
// the batches are decoded several at once, each by one copy on a thread of its
// own, and those decoded together stay within the memory limit; the
// translations are those one copy gives.
std::vector<std::vector<TextTranslation>> translate_lines(std::span<std::vector<LoadedModel>> replicas,
                                                          const std::vector<std::string>& lines,
                                                          const std::vector<std::int64_t>& tokens,
                                                          const TranslateFlags& f, const DecodeOptions& options);
std::vector<std::vector<TextTranslation>> translate_lines(std::vector<LoadedModel>& models,
                                                          const std::vector<std::string>& lines,
                                                          const std::vector<std::int64_t>& tokens,
                                                          const TranslateFlags& f, const DecodeOptions& options);

// Translates lines (tokens: checked_tokens of each) in groups whose translations
// fit in the memory limit together, in input order, <unk> replaced with
// --replace-unk; `done` receives each group's n-best lists before the next is
// decoded (translate writes them, the Python module checks for Ctrl-C). With
// replicas, as translate_lines.
void for_each_translated_group(std::span<std::vector<LoadedModel>> replicas, const std::vector<std::string>& lines,
                               const std::vector<std::int64_t>& tokens, const TranslateFlags& f,
                               const DecodeOptions& options, const UnkDictionary& dictionary,
                               const std::function<void(std::vector<std::vector<TextTranslation>>&)>& done);
void for_each_translated_group(std::vector<LoadedModel>& models, const std::vector<std::string>& lines,
                               const std::vector<std::int64_t>& tokens, const TranslateFlags& f,
                               const DecodeOptions& options, const UnkDictionary& dictionary,
                               const std::function<void(std::vector<std::vector<TextTranslation>>&)>& done);

// Without a reference --explain-grad explains the model's own greedy
// translation, whatever the beam: the gradient at the attention weights of the
// reference's loss, or of the greedy translation's.
AttentionGradients explained_gradients(LoadedModel& m, const TextTranslation& greedy, const std::string* reference);

void run_explain_grad(LoadedModel& m, const TranslateFlags& f, const std::vector<std::string>& lines);

}  // namespace attend::tools
