// attend experiment: BLEU against sentence length with and without attention,
// the cost of attention, and alignment heatmaps, in one command.
#include <limits>

#include <fmt/format.h>

#include "core/io/limits.hpp"
#include "tools/cli/checks.hpp"
#include "tools/cli/commands.hpp"
#include "tools/report/experiment.hpp"

namespace attend::tools {

void add_experiment_command(CLI::App& app) {
  auto o = std::make_shared<ExperimentOptions>();
  auto* cmd = app.add_subcommand(
      "experiment", "Train Seq2Seq without attention, with additive and with dot attention on the toy language; "
                    "write BLEU-vs-length, cost and attention figures, report.html and the three models "
                    "(OUT/models/none, additive, dot; replaced by the next experiment in OUT)");
  cmd->add_option("--out", o->out_dir, "Output directory")->check(check::out_directory())->capture_default_str();
  cmd->add_option("--minutes", o->minutes, "Time for the whole run (the models train side by side)")
      ->check(check::number(1.0, 10000.0))
      ->capture_default_str();
  cmd->add_flag("--quick", o->quick, "A smoke test of about a minute: tiny models, seconds of training");
  cmd->add_option("--seed", o->seed, "Seed of the data and the models")->check(check::seed())->capture_default_str();
  cmd->add_option("--train-pairs", o->train_pairs, "Training pairs (default: 60000, quick 2000)")
      ->check(check::integer(1, 10000000));
  cmd->add_option("--hidden", o->hidden, "Hidden size (default: 128, quick 32)")
      ->check(check::integer(1, limits::kMaxDimension, true));
  cmd->add_option("--embed", o->embed, "Embedding size (default: 64, quick 16)")
      ->check(check::integer(1, limits::kMaxDimension, true));
  cmd->add_option("--lr", o->lr, "Adam learning rate (default: 0.002, quick 0.005)")
      ->check(check::number(0.0, std::numeric_limits<double>::max(), true));
  cmd->callback([o] { run_experiment(*o); });
}

}  // namespace attend::tools
