// What `attend train` prints and logs at the end of each epoch, run as main()
// runs it in a forked child (tests/support/cli_child.hpp).
#include <doctest/doctest.h>

#include <string>

#include "tests/support/cli_child.hpp"

namespace {

using attend::testing::attend_cli;
using attend::testing::contains;
using attend::testing::Scratch;
using attend::testing::slurp;

}  // namespace

// 38 toy training pairs in batches of 16 are 3 steps an epoch, so --max-steps 3
// ends the run at the start of epoch 2, before its first step. That epoch's line
// once read "train loss nan"; values an epoch does not have are "-".
TEST_CASE("an epoch that --max-steps ends before its first step shows no training loss") {
  Scratch s("attend_train_cli");
  const std::string out = s.path("model");
  const auto r = attend_cli(s, {"train", "--toy", "--toy-n", "40", "--toy-max-len", "5", "--batch", "16", "--embed", "4",
                                "--hidden", "4", "--epochs", "3", "--max-steps", "3", "--bleu-sentences", "0", "--out", out});
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  CHECK_MESSAGE(contains(r.out, "3/3  train loss "), r.out);  // epoch 1 has its loss
  CHECK_MESSAGE(contains(r.out, "epoch 2: train loss -  valid loss "), r.out);
  CHECK_MESSAGE(contains(r.out, "(time is up)"), r.out);
  CHECK_MESSAGE(contains(r.out, "BLEU -"), r.out);  // --bleu-sentences 0
  CHECK_MESSAGE(!contains(r.out, "nan"), r.out);
  const std::string log = slurp(out + "/train_log.csv");
  CHECK_MESSAGE(contains(log, "\n2,0,0,,"), log);
  CHECK_MESSAGE(!contains(log, "nan"), log);
}
