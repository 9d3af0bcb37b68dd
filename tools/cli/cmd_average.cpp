// attend average --out DIR DIR1 DIR2 ...: one model whose every weight is the
// mean of the inputs' (models/train/average.hpp).
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/io/limits.hpp"
#include "models/train/average.hpp"
#include "tools/cli/checks.hpp"
#include "tools/cli/commands.hpp"

namespace attend::tools {

namespace {

struct AverageFlags {
  std::vector<std::string> inputs;
  std::string out;
  bool overwrite = false;
  std::string weights = "best";
};

void run_average(const AverageFlags& f) {
  AverageOptions options;
  options.overwrite = f.overwrite;
  options.weights = f.weights == "last" ? "checkpoint/last.safetensors" : "model.safetensors";
  const AverageReport r = average_model_dirs(f.inputs, f.out, options);
  fmt::print("averaged {} models ({} parameters in {} tensors) into {}{}\n", r.models, r.parameters, r.tensors, f.out,
             r.replaced ? " (replaced the directory that was there)" : "");
}

}  // namespace

void add_average_command(CLI::App& app) {
  auto f = std::make_shared<AverageFlags>();
  auto* cmd = app.add_subcommand("average", "Average the parameters of trained copies of one model into a new model");
  cmd->footer(
      "The inputs must share the architecture (config.json's model fields), the tokenizer options and the\n"
      "vocabularies; config.json and the vocabularies of the first are copied. The output is written beside --out\n"
      "and moved in place once it loads; an existing --out is only replaced with --overwrite.");
  // Their number is checked by average_model_dirs, whose message says how many it needs.
  cmd->add_option("DIRS", f->inputs, fmt::format("Model directories to average (2 to {})", limits::kMaxAverage));
  cmd->add_option("--out", f->out, "The new model directory")->required()->check(check::out_directory());
  cmd->add_flag("--overwrite", f->overwrite, "Replace --out if it exists");
  cmd->add_option("--weights", f->weights,
                  "Which weights of each input: best (DIR/model.safetensors, the lowest validation loss) or last "
                  "(DIR/checkpoint/last.safetensors, the end of its training run)")
      ->check(CLI::IsMember({"best", "last"}))
      ->capture_default_str();
  cmd->callback([f] { run_average(*f); });
}

}  // namespace attend::tools
