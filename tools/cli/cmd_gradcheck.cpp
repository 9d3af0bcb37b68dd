// attend gradcheck: runs the gradient check of every op over several cases and
// prints a table. Exits non-zero when any case fails, and when --op matches no op.
#include <chrono>
#include <cstdio>

#include <fmt/format.h>

#include "core/error.hpp"
#include "tools/cli/commands.hpp"
#include "tools/gradcheck/op_cases.hpp"

namespace attend::tools {

namespace {
int run_gradcheck(const std::string& only, bool verbose) {
  if (!only.empty()) {
    bool any = false;
    for (const std::string& name : op_names()) any = any || name.find(only) != std::string::npos;
    if (!any)
      fail("gradcheck: no op matches --op '{}'; the ops are: {} (attend gradcheck --list)", only,
           fmt::join(op_names(), ", "));
  }
  const auto start = std::chrono::steady_clock::now();
  int passed = 0, failed = 0;
  fmt::print("{:<22} {:<44} {:>12} {:>12}  {}\n", "op", "case", "max abs err", "max rel err", "result");
  fmt::print("{}\n", std::string(100, '-'));
  for (const OpCase& c : op_cases()) {
    if (!only.empty() && c.op.find(only) == std::string::npos) continue;
    GradcheckReport report;
    std::string error;
    try {
      report = c.run();
    } catch (const Error& e) {
      report.passed = false;
      error = e.what();
    }
    report.passed ? ++passed : ++failed;
    fmt::print("{:<22} {:<44} {:>12.2e} {:>12.2e}  {}\n", c.op, c.name, report.max_abs_error(), report.max_rel_error(),
               report.passed ? "pass" : "FAIL");
    if (!error.empty()) fmt::print("    error: {}\n", error);
    if (!report.passed || verbose) fmt::print("{}", report.str());
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  fmt::print("{}\n{} passed, {} failed ({:.1f} s; float64, central differences, random upstream gradient)\n",
             std::string(100, '-'), passed, failed, seconds);
  std::fflush(stdout);
  return failed == 0 ? 0 : 1;
}
}  // namespace

void add_gradcheck_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("gradcheck", "Check every op's backward against finite differences");
  auto only = std::make_shared<std::string>();
  auto verbose = std::make_shared<bool>(false);
  auto list = std::make_shared<bool>(false);
  cmd->add_option("--op", *only, "Only the ops whose name contains this text (an error when none does)");
  cmd->add_flag("-v,--verbose", *verbose, "Print the per-input report of every case");
  cmd->add_flag("--list", *list, "Print the name of every op checked, one a line, and exit");
  cmd->callback([only, verbose, list] {
    if (*list) {
      for (const std::string& name : op_names()) fmt::print("{}\n", name);
      return;
    }
    const int code = run_gradcheck(*only, *verbose);
    if (code != 0) throw CLI::RuntimeError(code);
  });
}

}  // namespace attend::tools
