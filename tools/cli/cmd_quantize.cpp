// attend quantize IN_DIR OUT_DIR: an int8 model for faster decoding
// (models/quantize/quantize_dir.hpp).
#include <memory>
#include <string>

#include <fmt/format.h>

#include "core/io/limits.hpp"
#include "models/quantize/quantize_dir.hpp"
#include "tools/cli/checks.hpp"
#include "tools/cli/commands.hpp"

namespace attend::tools {

namespace {

struct QuantizeFlags {
  std::string in, out;
  bool overwrite = false;
};

void run_quantize(const QuantizeFlags& f) {
  const QuantizeReport r = quantize_model_dir(f.in, f.out, f.overwrite);
  fmt::print("quantized {} weight matrices ({} weights) to int8, kept {} weights in float32; model.safetensors {} -> "
             "{}; wrote {}{}\n",
             r.matrices, r.quantized, r.kept, limits::bytes_text(r.bytes_in), limits::bytes_text(r.bytes_out), f.out,
             r.replaced ? " (replaced the directory that was there)" : "");
}

}  // namespace

void add_quantize_command(CLI::App& app) {
  auto f = std::make_shared<QuantizeFlags>();
  auto* cmd = app.add_subcommand("quantize", "Make an int8 copy of a trained model, for faster decoding");
  cmd->footer(
      "Every weight matrix (LSTM, attention, W_c, the output projection) becomes int8 with a float32 scale per row;\n"
      "decoding then quantizes the activations row by row at each product (docs/translating.md, int8 models).\n"
      "The embeddings and biases stay float32. The result is a model directory like any other: translate, eval and\n"
      "serve read it; it ensembles and averages only with other int8 models, and it is not trained further.\n"
      "OUT_DIR is written beside itself and moved in place once it loads; an existing one is only replaced with\n"
      "--overwrite.");
  cmd->add_option("IN_DIR", f->in, "The float32 model directory (attend train's --out)")->required();
  cmd->add_option("OUT_DIR", f->out, "The new int8 model directory")->required()->check(check::out_directory());
  cmd->add_flag("--overwrite", f->overwrite, "Replace OUT_DIR if it exists");
  cmd->callback([f] { run_quantize(*f); });
}

}  // namespace attend::tools
