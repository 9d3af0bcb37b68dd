// attend explain: backprop through one attention step, number by number (the
// logic is in tools/explain.cpp). Exits non-zero when a gradient row disagrees
// with its finite difference.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/file_io.hpp"
#include "tools/commands.hpp"
#include "tools/explain.hpp"

namespace attend::tools {

namespace {

// A path as one word for /bin/sh: in single quotes, with ' written as '\''.
std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char ch : s) out += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return out + "'";
}

// Writes the DOT file and, when Graphviz's `dot` is installed, the SVG beside it.
void write_graph(const std::string& path, const std::string& dot) {
  write_file_atomic(path, dot);
  fmt::print("\nwrote the step's graph to {}\n", path);
  std::filesystem::path svg = std::filesystem::path(path).replace_extension(".svg");
  if (svg == std::filesystem::path(path)) svg += ".svg";  // FILE was already called *.svg
  if (std::system("command -v dot >/dev/null 2>&1") != 0) {
    fmt::print("(Graphviz's dot is not installed: render it with  dot -Tsvg {} -o {})\n", path, svg.string());
    return;
  }
  const std::string command = fmt::format("dot -Tsvg {} -o {}", shell_quote(path), shell_quote(svg.string()));
  if (std::system(command.c_str()) != 0) fail("explain: '{}' failed", command);
  fmt::print("rendered it to {}\n", svg.string());
}

}  // namespace

void add_explain_command(CLI::App& app) {
  auto options = std::make_shared<ExplainOptions>();
  auto dot_file = std::make_shared<std::string>();
  auto* cmd = app.add_subcommand("explain",
                                 "Backprop through attention, number by number: one decoder step of a tiny model, "
                                 "every gradient beside its finite difference");
  cmd->add_option("--attention", options->attention, "Attention of the tiny model")
      ->check(CLI::IsMember({"additive", "dot"}))
      ->capture_default_str();
  cmd->add_option("--seed", options->seed, "Seed of the model's parameters")->capture_default_str();
  cmd->add_option("--dot", *dot_file, "Write the step's computation graph as Graphviz DOT to FILE (and FILE's .svg "
                                      "when dot is installed)");
  cmd->callback([options, dot_file] {
    const ExplainResult result = explain_attention(*options);
    fmt::print("{}", result.text);
    if (!dot_file->empty()) write_graph(*dot_file, result.dot);
    std::fflush(stdout);
    if (result.failed != 0) throw CLI::RuntimeError(1);
  });
}

}  // namespace attend::tools
