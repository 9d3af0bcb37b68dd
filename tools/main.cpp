// attend: the command line. Each subcommand is defined in tools/cmd_<name>.cpp.
#include <cstdio>

#include <CLI/CLI.hpp>

#include "core/error.hpp"
#include "tools/commands.hpp"

int main(int argc, char** argv) {
  CLI::App app{"attend: sequence-to-sequence models with attention, from scratch, on a CPU"};
  app.set_version_flag("--version", std::string("attend ") + ATTEND_VERSION);
  app.require_subcommand(1);
  attend::tools::add_experiment_command(app);
  attend::tools::add_explain_command(app);
  attend::tools::add_train_command(app);
  attend::tools::add_translate_command(app);
  attend::tools::add_eval_command(app);
  attend::tools::add_data_command(app);
  attend::tools::add_bleu_command(app);
  attend::tools::add_bench_command(app);
  attend::tools::add_gradcheck_command(app);
  attend::tools::add_inspect_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const attend::Error& e) {
    std::fprintf(stderr, "attend: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
