// attend explain: backprop by hand, number by number (the logic is in
// tools/explain/explain.cpp and tools/explain/explain_lstm.cpp). Exits non-zero when a gradient
// row disagrees with its finite difference.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/io/file_io.hpp"
#include "tools/cli/checks.hpp"
#include "tools/cli/commands.hpp"
#include "tools/explain/explain.hpp"

namespace attend::tools {

namespace {

// A path as one word for /bin/sh: in single quotes, with ' written as '\''.
std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char ch : s) out += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return out + "'";
}

// What a shell command prints on its standard output; throws when it fails.
std::string output_of(const std::string& command) {
  std::FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) fail("explain: could not run '{}'", command);
  std::string out;
  char buffer[4096];
  for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) out.append(buffer, n);
  const bool read_error = std::ferror(pipe) != 0;
  const int status = pclose(pipe);
  if (read_error || status != 0) fail("explain: '{}' failed", command);
  return out;
}

// Writes the DOT file and, when Graphviz's `dot` is installed, the SVG beside it.
void write_dot(const std::string& path, const std::string& dot) {
  write_file_atomic(path, dot);
  fmt::print("\nwrote the step's graph as Graphviz DOT to {}\n", path);
  std::filesystem::path svg = std::filesystem::path(path).replace_extension(".svg");
  if (svg == std::filesystem::path(path)) svg += ".svg";  // FILE was already called *.svg
  // Graphviz reads the file again: a FIFO or a device has nothing left to read.
  if (!std::filesystem::is_regular_file(std::filesystem::symlink_status(resolve_symlinks(path)))) {
    fmt::print("(not rendered: {} is not a regular file; render a copy with  dot -Tsvg FILE -o {})\n", path,
               svg.string());
    return;
  }
  if (std::system("command -v dot >/dev/null 2>&1") != 0) {
    fmt::print("(Graphviz's dot is not installed: render it with  dot -Tsvg {} -o {},\n", path, svg.string());
    fmt::print(" or let attend draw the graph itself: attend explain --graph step.svg)\n");
    return;
  }
  // dot writes to its standard output, not to the SVG: the SVG is then written
  // as every output is (write_file_atomic), complete or absent, and through a
  // device, FIFO or symlink, never renamed over.
  const std::string command = fmt::format("dot -Tsvg {}", shell_quote(path));
  write_file_atomic(svg.string(), output_of(command));
  fmt::print("rendered it to {}\n", svg.string());
}

struct Files {
  std::string dot, json, graph;
};

}  // namespace

void add_explain_command(CLI::App& app) {
  auto options = std::make_shared<ExplainOptions>();
  auto files = std::make_shared<Files>();
  auto lstm = std::make_shared<bool>(false);
  auto* cmd = app.add_subcommand("explain",
                                 "Backprop by hand, number by number: one decoder step of a tiny attention model "
                                 "(or, with --lstm, an LSTM cell over 3 steps), every parameter and intermediate, "
                                 "every gradient beside its finite difference");
  auto* attention = cmd->add_option("--attention", options->attention, "Attention of the tiny model")
                        ->check(CLI::IsMember({"additive", "dot", "general"}))
                        ->capture_default_str();
  auto* padded = cmd->add_flag("--padded", options->padded,
                               "Add a 4th source position that is padding: its weight, and the gradients reaching "
                               "its score and its state, are exactly 0");
  cmd->add_option("--seed", options->seed,
                  "Seed that draws the model's parameters and then the inputs: the encoder states h_j and the "
                  "decoder state s (with --lstm: x_t, h_0, c_0 and the loss weights r_t)")
      ->check(check::seed())
      ->capture_default_str();
  cmd->add_flag("--lstm", *lstm, "Explain an LSTM cell over 3 time steps instead: gates, both paths of dL/dc_t, "
                                 "dW_ih, dW_hh, db")
      ->excludes(attention)
      ->excludes(padded);
  cmd->add_option("--json", files->json, "Write every number (values and gradients, analytic and numeric) as JSON "
                                         "to FILE; tests/reference/torch_explain.py recomputes them with PyTorch")
      ->type_name("FILE");
  cmd->add_option("--graph", files->graph,
                                "Draw the step's graph as SVG to FILE (attend draws it, no Graphviz): the composed and "
                                "the fused step (or LSTM cell) side by side, value and gradient in every small box")
                    ->type_name("FILE");
  auto* dot = cmd->add_option("--dot", files->dot, "Write the step's computation graph as Graphviz DOT to FILE (and "
                                                   "FILE's .svg when dot is installed)")
                  ->type_name("FILE");
  dot->excludes("--lstm");
  cmd->callback([options, files, lstm] {
    const ExplainResult result = *lstm ? explain_lstm(*options) : explain_attention(*options);
    fmt::print("{}", result.text);
    if (!files->json.empty()) {
      write_file_atomic(files->json, result.json);
      fmt::print("\nwrote every number to {}\n", files->json);
    }
    if (!files->graph.empty()) {
      write_file_atomic(files->graph, result.graph);
      fmt::print("\ndrew the graph to {}\n", files->graph);
    }
    if (!files->dot.empty()) write_dot(files->dot, result.dot);
    std::fflush(stdout);
    if (result.failed != 0) throw CLI::RuntimeError(1);
  });
}

}  // namespace attend::tools
