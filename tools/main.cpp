// attend: the command line. Each subcommand is defined in tools/cli/cmd_<name>.cpp
// (eval beside translate, bleu beside data);
// tools/cli/cli.cpp wires them up and reports every error.
#include "tools/cli/cli.hpp"

int main(int argc, char** argv) { return attend::tools::run_cli(argc, argv, ATTEND_VERSION); }
