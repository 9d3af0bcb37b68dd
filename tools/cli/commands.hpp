#pragma once
// One function per `attend` subcommand: each adds its subcommand, options and
// callback to the app. main.cpp calls them in the order they appear in --help.
#include <CLI/CLI.hpp>

namespace attend::tools {

void add_experiment_command(CLI::App& app);
void add_explain_command(CLI::App& app);
void add_train_command(CLI::App& app);
void add_translate_command(CLI::App& app);
void add_eval_command(CLI::App& app);
void add_average_command(CLI::App& app);
void add_quantize_command(CLI::App& app);
void add_data_command(CLI::App& app);
void add_bleu_command(CLI::App& app);
void add_bench_command(CLI::App& app);
void add_gradcheck_command(CLI::App& app);
void add_inspect_command(CLI::App& app);
void add_serve_command(CLI::App& app);

}  // namespace attend::tools
