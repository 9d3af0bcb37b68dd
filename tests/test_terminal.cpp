// tools/terminal: the progress bar's text and the attention drawing.
#include <doctest/doctest.h>

#include "core/error.hpp"
#include "tools/terminal.hpp"

using namespace attend;
using namespace attend::tools;

TEST_CASE("durations read like a clock") {
  CHECK(format_duration(0) == "0s");
  CHECK(format_duration(59.4) == "59s");
  CHECK(format_duration(249) == "4:09");
  CHECK(format_duration(3 * 3600 + 5 * 60 + 3) == "3:05:03");
  CHECK(format_duration(-1) == "?");
}

TEST_CASE("the progress bar shows position, status and ETA") {
  ProgressBar bar("epoch 2", 100, false);
  // 25 of 100 done in 10 s: 75 left at the same pace is 30 s.
  CHECK(bar.render(25, "loss 1.500", 10.0) == "epoch 2 [######..................] 25/100  loss 1.500  ETA 30s");
  CHECK(bar.render(100, "", 40.0) == "epoch 2 [########################] 100/100  ETA 0s");
  ProgressBar open_ended("step", 0, false);
  CHECK(open_ended.render(7, "loss 2", 1.0) == "step 7  loss 2");
}

TEST_CASE("attention is drawn with source words above their columns") {
  std::string text = attention_text({"ab", "c"}, {"x", "yy"}, {{1.0, 0.0}, {0.5, 0.5}}, true);
  CHECK(text == "   a c \n"
                "   b   \n"
                " x 9 0 \n"
                "yy 5 5 \n");
  std::string shaded = attention_text({"é"}, {"e"}, {{1.0}});
  CHECK(shaded.find("██") != std::string::npos);
  CHECK(shaded.find("é") != std::string::npos);
  CHECK_THROWS_WITH_AS(attention_text({"a"}, {"x", "y"}, {{1.0}}), "attention_text: 1 rows of weights for 2 output tokens",
                       Error);
}
