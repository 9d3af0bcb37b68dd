#pragma once
// The experiment's figures (SVG) and its self-contained HTML report.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/eval/evaluation.hpp"
#include "models/train/trainer.hpp"
#include "tools/report/experiment.hpp"
#include "tools/report/svg.hpp"

namespace attend::tools {

struct ReportRun {
  std::string name;
  Seq2Seq* model = nullptr;
  std::vector<CurvePoint> curve;
  std::int64_t steps = 0;
  double seconds = 0;
  BleuReport bleu;
};

struct ReportInput {
  ExperimentOptions options;
  const Vocabulary* source_vocab = nullptr;
  const Vocabulary* target_vocab = nullptr;
  TokenizerOptions tokenizer;
  const std::vector<SentencePair>* test = nullptr;
  std::vector<ReportRun> runs;  // none, additive, dot
  nlohmann::json cost;          // [{model, m, t, ms, attention_flops}]
};

// Writes the SVG figures and report.html into options.out_dir; returns every
// number in them (results.json).
nlohmann::json write_report(const ReportInput& input);

// The two pictures of an attention_gradients result: alpha (titled
// `alpha_title`, shaded 0 to 1) and dL/dalpha (diverging around 0), with the
// source tokens across and the target tokens, called `row_axis`, down.
struct GradientHeatmaps {
  svg::Heatmap alpha, dalpha;
};
GradientHeatmaps gradient_heatmaps(const AttentionGradients& g, const std::string& alpha_title,
                                   const std::string& row_axis);

// The sentence-choosing rule, exposed for tests: the index of the first test
// pair whose source has an adjective that French puts after its noun and whose
// length is within [lo, hi]; -1 if none.
int find_reordering_sentence(const std::vector<SentencePair>& pairs, int lo, int hi);

}  // namespace attend::tools
