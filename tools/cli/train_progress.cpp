// attend train: what the run shows while it trains (train_command.hpp).
#include <algorithm>
#include <memory>

#include <fmt/format.h>

#include "tools/cli/terminal.hpp"
#include "tools/cli/train_command.hpp"

namespace attend::tools {

namespace {

std::string number_of(double tokens_per_second) {
  return tokens_per_second >= 1000 ? fmt::format("{:.1f}k", tokens_per_second / 1000) : fmt::format("{:.0f}", tokens_per_second);
}

// What the hooks share: the current epoch's bar, and a smoothed rate.
struct Progress {
  bool terminal = is_terminal(stdout);
  std::int64_t epochs = 0;
  bool validated = false, scored = false;
  std::unique_ptr<ProgressBar> bar;
  double recent_tokens_per_second = 0;

  void step(const StepReport& r) {
    if (!bar || r.step == 1)
      bar = std::make_unique<ProgressBar>(fmt::format("epoch {}/{}", r.epoch, epochs), r.steps_in_epoch, terminal);
    recent_tokens_per_second =
        recent_tokens_per_second == 0 ? r.tokens_per_second : 0.9 * recent_tokens_per_second + 0.1 * r.tokens_per_second;
    bar->update(r.step, fmt::format("loss {:.3f}  {} tok/s", r.loss, number_of(recent_tokens_per_second)));
  }

  void epoch(const EpochReport& r) {
    const std::string line = fmt::format(
        "train loss {}  valid loss {}  ppl {}  BLEU {}{}{}", value_or_dash(r.steps > 0, r.train_loss, 4),
        value_or_dash(validated, r.valid_loss, 4), value_or_dash(validated, r.valid_perplexity, 2),
        value_or_dash(scored, r.valid_bleu, 2), r.best ? "  (best, saved)" : "", r.complete ? "" : "  (time is up)");
    if (bar) bar->finish(line);
    else fmt::print("epoch {}: {}\n", r.epoch, line);
    bar.reset();
  }
};

}  // namespace

// A value the epoch does not have is "-": no training loss without a step (an epoch that
// --max-steps or --minutes ended before it began), no validation without validation pairs,
// no BLEU with --bleu-sentences 0.
std::string value_or_dash(bool has, double v, int digits) {
  return has ? fmt::format("{:.{}f}", v, digits) : std::string("-");
}

TrainHooks progress_hooks(const TrainFlags& f, const Dataset& data) {
  auto progress = std::make_shared<Progress>();
  progress->epochs = f.train.epochs;
  progress->validated = !data.valid.empty();
  progress->scored = progress->validated && f.train.bleu_sentences > 0;
  TrainHooks hooks;
  hooks.on_step = [progress](const StepReport& r) { progress->step(r); };
  hooks.on_epoch = [progress](const EpochReport& r) { progress->epoch(r); };
  return hooks;
}

// The best epoch is the one the trainer saved (validation loss, or training loss without validation data).
void print_best(const TrainFlags& f, const Dataset& data, const Trainer& trainer) {
  const bool validated = !data.valid.empty(), scored = validated && f.train.bleu_sentences > 0;
  const auto& h = trainer.history();
  auto best = std::find_if(h.rbegin(), h.rend(), [](const EpochReport& r) { return r.best; });
  if (best != h.rend())
    fmt::print("best: epoch {} (valid loss {}, BLEU {}); model in {}/model.safetensors, log in {}/train_log.csv\n",
               best->epoch, value_or_dash(validated, best->valid_loss, 4), value_or_dash(scored, best->valid_bleu, 2),
               f.out, f.out);
}

}  // namespace attend::tools
