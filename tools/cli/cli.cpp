#include "tools/cli/cli.hpp"

#include <csignal>
#include <cstdio>
#include <filesystem>
#include <new>
#include <string_view>
#include <system_error>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "core/kernels/blas.hpp"
#include "core/error.hpp"
#include "core/io/file_io.hpp"
#include "core/io/printable.hpp"
#include "tools/cli/commands.hpp"

namespace attend::tools {

namespace {

// "PATH: cannot create directories: File exists" from libstdc++'s
// "filesystem error: cannot create directories: File exists [PATH]".
std::string describe(const std::filesystem::filesystem_error& e) {
  std::string_view what = e.what();
  if (what.starts_with("filesystem error: ")) what.remove_prefix(18);
  if (auto bracket = what.find(" ["); bracket != std::string_view::npos) what = what.substr(0, bracket);
  const std::string path = e.path1().empty() ? std::string("'' (an empty path)") : printable(e.path1().string());
  std::string text = fmt::format("{}: {}", path, what);
  if (e.code() == std::errc::file_exists || e.code() == std::errc::not_a_directory)
    text += " (a file is in the way of a directory)";
  return text;
}

int report(const std::string& message) {
  std::fflush(stdout);
  std::fprintf(stderr, "attend: error: %s\n", message.c_str());
  return 1;
}

}  // namespace

std::string blas_kernels_line() {
  return "OpenBLAS kernels " + blas::kernels_in_use() + "\nfloat32 products run on " + blas::float_products();
}

int run_cli(int argc, char** argv, const std::string& version) {
  // A reader that goes away (a FIFO's, `| head`'s) makes the next write fail with
  // EPIPE, which the writers report naming the file, instead of SIGPIPE ending
  // attend without a word.
  std::signal(SIGPIPE, SIG_IGN);
  CLI::App app{"attend: sequence-to-sequence models with attention, from scratch, on a CPU"};
  app.set_version_flag("--version", "attend " + version + "\n" + blas_kernels_line());
  app.require_subcommand(1);
  // A bad command line reads like every other error.
  app.failure_message([](const CLI::App*, const CLI::Error& e) {
    return fmt::format("attend: error: {}\nRun with --help for more information.\n", e.what());
  });
  add_experiment_command(app);
  add_explain_command(app);
  add_train_command(app);
  add_translate_command(app);
  add_eval_command(app);
  add_average_command(app);
  add_quantize_command(app);
  add_data_command(app);
  add_bleu_command(app);
  add_bench_command(app);
  add_gradcheck_command(app);
  add_inspect_command(app);
  add_serve_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const Error& e) {
    return report(e.what());
  } catch (const std::filesystem::filesystem_error& e) {
    return report(describe(e));
  } catch (const std::system_error& e) {
    // fmt::print throws this when stdio cannot write (standard output on a full disk).
    if (std::ferror(stdout)) return report(fmt::format("write: standard output: cannot write: {}", e.code().message()));
    return report(fmt::format("internal error: {}", printable(e.what())));
  } catch (const std::bad_alloc&) {
    // Inputs are checked against core/io/limits.hpp before allocating; this is
    // what is left: a model or batch within the limits but beyond this machine.
    return report("out of memory (try a smaller model, batch or input)");
  } catch (const std::exception& e) {
    return report(fmt::format("internal error: {}", printable(e.what())));
  } catch (...) {
    return report("internal error: an unknown exception");
  }
  // What stdio still holds is written now, while a failure can change the exit status.
  try {
    flush_stream(stdout, "standard output");
  } catch (const Error& e) {
    return report(e.what());
  }
  return 0;
}

}  // namespace attend::tools
