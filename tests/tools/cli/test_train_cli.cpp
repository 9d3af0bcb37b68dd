// What `attend train` prints and logs at the end of each epoch, run as main()
// runs it in a forked child (tests/support/cli_child.hpp).
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "tests/support/cli_child.hpp"
#include "tools/cli/train_command.hpp"

namespace {

using attend::testing::attend_cli;
using attend::testing::contains;
using attend::testing::Scratch;
using attend::testing::slurp;

}  // namespace

// 38 toy training pairs in batches of 16 are 3 steps an epoch, so --max-steps 3
// ends the run at the start of epoch 2, before its first step. That epoch once
// printed "epoch 2: train loss -", validated epoch 1's weights again and logged
// the row "2,0,0,,"; the run now stops before it and says where it stopped.
TEST_CASE("a run that --max-steps ends at an epoch's boundary logs no epoch without a step") {
  Scratch s("attend_train_cli");
  const std::string out = s.path("model");
  const auto r = attend_cli(s, {"train", "--toy", "--toy-n", "40", "--toy-max-len", "5", "--batch", "16", "--embed", "4",
                                "--hidden", "4", "--epochs", "3", "--max-steps", "3", "--bleu-sentences", "0", "--out", out});
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  CHECK_MESSAGE(contains(r.out, "3/3  train loss "), r.out);  // epoch 1 has its loss
  CHECK_MESSAGE(contains(r.out, "BLEU -"), r.out);            // --bleu-sentences 0
  CHECK_MESSAGE(!contains(r.out, "epoch 2/"), r.out);  // no bar or line of epoch 2
  CHECK_MESSAGE(!contains(r.out, "epoch 2:"), r.out);
  CHECK_MESSAGE(!contains(r.out, "train loss -"), r.out);
  CHECK_MESSAGE(contains(r.out, "time is up at step 3, in epoch 2 of 3"), r.out);
  CHECK_MESSAGE(!contains(r.out, "nan"), r.out);
  const std::string log = slurp(out + "/train_log.csv");
  CHECK_MESSAGE(contains(log, "\n1,1,3,"), log);
  CHECK_MESSAGE(!contains(log, "\n2,"), log);
  CHECK_MESSAGE(!contains(log, "nan"), log);
}

// Resuming that run with the same --max-steps could take no step: it once added
// another epoch without a step to the log at every attempt. It is refused up
// front, saying why, and the log keeps its rows.
TEST_CASE("a resume that --max-steps leaves no step to take is refused, and the log is unchanged") {
  Scratch s("attend_train_cli_nostep");
  const std::string out = s.path("model");
  const std::vector<std::string> run = {"train", "--toy", "--toy-n", "40", "--toy-max-len", "5", "--batch", "16",
                                        "--embed", "4", "--hidden", "4", "--epochs", "3", "--bleu-sentences", "0",
                                        "--out", out};
  auto with = [&](std::vector<std::string> more) {
    std::vector<std::string> args = run;
    args.insert(args.end(), more.begin(), more.end());
    return args;
  };
  const auto first = attend_cli(s, with({"--max-steps", "2"}));
  REQUIRE_MESSAGE(first.exit_code == 0, first.err);
  const std::string log = slurp(out + "/train_log.csv");
  const auto again = attend_cli(s, with({"--max-steps", "2", "--resume"}));
  CHECK(again.exit_code != 0);
  CHECK_MESSAGE(contains(again.err, "no step is left to take: the run is at step 2 and max_steps is 2"), again.err);
  CHECK(slurp(out + "/train_log.csv") == log);
  const auto more = attend_cli(s, with({"--max-steps", "4", "--resume"}));  // a higher limit continues
  CHECK_MESSAGE(more.exit_code == 0, more.err);
  CHECK_MESSAGE(contains(more.out, "resuming " + out + " at epoch 1, step 2"), more.out);
}

// attend.train (the Python module) parses the flags with an App that is gone
// before the run starts: whether --lr and --data-seed were given must outlive
// it. They were once read from the App's options after it was freed.
TEST_CASE("train flags record --lr and --data-seed as given, past the life of the App that parsed them") {
  for (const bool given : {false, true}) {
    CAPTURE(given);
    attend::tools::TrainFlags f;
    {
      CLI::App app{"attend"};
      CLI::App* cmd = app.add_subcommand("train");
      attend::tools::add_train_flags(*cmd, f);
      std::vector<std::string> args = {"train", "--toy"};
      if (given) args.insert(args.end(), {"--lr", "0.5", "--data-seed", "7"});
      std::reverse(args.begin(), args.end());  // CLI11 takes the arguments last first
      app.parse(args);
    }
    CHECK(f.lr_given == given);
    CHECK(f.data_seed_given == given);
    if (given) {
      CHECK(f.train.lr == 0.5);
      CHECK(f.data_seed == 7);
    }
  }
}
