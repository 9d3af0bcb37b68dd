#pragma once
// attend experiment: the seed's three pictures, reproduced on a CPU in minutes.
//  1. BLEU against sentence length for Seq2Seq without attention, with additive
//     and with dot-product attention, trained on the same toy data for the same
//     time (like Bahdanau et al.'s Figure 2);
//  2. the cost of attention: decoding time and attention FLOPs over a grid of
//     source length m and output length t, against m*t;
//  3. attention weights as heatmaps (and the gradient dL/dalpha beside them).
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace attend::tools {

struct ExperimentOptions {
  std::string out_dir = "experiment";
  double minutes = 10;  // the whole run, training included
  bool quick = false;   // a smoke test: tiny models, seconds of training
  std::uint64_t seed = 1;
  // Filled from quick/minutes by defaults(); may be overridden.
  std::int64_t train_pairs = 0, valid_pairs = 0, test_per_bucket = 0;
  std::int64_t embed = 0, hidden = 0, batch = 0;
  double lr = 0;
  double train_seconds = 0;  // per model; the models train side by side
  std::vector<std::int64_t> cost_lengths;  // m and t values of the cost grid
  void defaults();
};

// Runs everything and writes DIR/{bleu_vs_length,loss,cost}.svg, attention_*.svg,
// gradient_*.svg, step_graph.svg (attend explain --graph), results.json and
// report.html. Returns results.json's content.
nlohmann::json run_experiment(ExperimentOptions options);

}  // namespace attend::tools
