#pragma once
// The whole `attend` program as a function (main.cpp calls it; tests call it
// in-process): parses the command line, runs the subcommand, and turns every
// exception into "attend: error: ..." on stderr and a non-zero exit code, so
// that no input ends in an abort.
#include <string>

namespace attend::tools {

// The exit code: 0 on success, 1 for an error, CLI11's codes for a bad command line.
int run_cli(int argc, char** argv, const std::string& version);

// "OpenBLAS kernels Haswell (OPENBLAS_CORETYPE=Haswell; ...): OpenBLAS 0.3.21 ...":
// which kernels do the matrix products and why (attend --version, attend bench).
std::string blas_kernels_line();

}  // namespace attend::tools
