// core/io/limits.hpp and what enforces it: Shape refuses products past int64 (D4),
// Seq2SeqConfig refuses models past the size limits before allocating, reads of
// text files are bounded, and printable() escapes what a file may smuggle into
// a message.
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/error.hpp"
#include "core/io/limits.hpp"
#include "core/io/printable.hpp"
#include "core/shape.hpp"
#include "models/seq2seq.hpp"
#include "tests/support/scratch.hpp"

using namespace attend;
using namespace std::string_literals;

TEST_CASE("D4: Shape refuses dimensions whose product overflows, a zero dimension makes any shape empty") {
  const std::int64_t big = std::int64_t{1} << 62;
  CHECK_THROWS_WITH_AS(Shape({big, big}),
                       "Shape: [4611686018427387904] with a dimension 4611686018427387904 added has more elements than "
                       "fit in 64 bits",
                       Error);
  CHECK_THROWS_WITH_AS(Shape({1, big, 4}), "Shape: [1, 4611686018427387904] with a dimension 4 added has more elements "
                                           "than fit in 64 bits",
                       Error);
  // The zero dimension is looked at first, wherever it is: 0 elements, not an overflow.
  CHECK(Shape({0, big, big}).numel() == 0);
  CHECK(Shape({big, big, 0}).numel() == 0);
  CHECK(Shape({0, big, 4}).numel() == 0);
  CHECK(Shape({0, big, big}).count(1, 3) == 0);  // an extent past int64: only an empty shape has one
  CHECK(Shape({0, big, 2}).count(0, 2) == 0);
  CHECK(Shape({3, 0, 5}).count(0, 1) == 3);
  CHECK(strides_of(Shape({0, big, big}))[2] == 1);
  CHECK(strides_of(Shape({0, big, big}))[1] == big);
  CHECK(strides_of(Shape({2, 3, 4}))[0] == 12);
  // Dropping the empty axis leaves a product that does not fit: refused, not wrapped.
  CHECK_THROWS_AS(Shape({0, big, big}).without(0), Error);
  CHECK(Shape({big, 0}).numel() == 0);  // the product of the others fits: an empty tensor
  CHECK(Shape({big, 1}).numel() == big);
  CHECK(Shape({3, 0, 5}).numel() == 0);
  CHECK_THROWS_AS(Shape({big}).with(0, big).inserted(0, 4), Error);
  Shape s{4, 4};
  s[0] = big;  // a dimension changed in place is caught when counted
  CHECK_THROWS_WITH_AS(s.numel(), "Shape: [4611686018427387904, 4] has more elements than fit in 64 bits", Error);
}

TEST_CASE("Seq2SeqConfig: parameter_count is the model's, and sizes past the limits are refused before allocating") {
  for (AttentionKind attention : {AttentionKind::None, AttentionKind::Additive, AttentionKind::Dot, AttentionKind::General})
    for (bool bidirectional : {false, true}) {
      Seq2SeqConfig c;
      c.source_vocab = 11;
      c.target_vocab = 13;
      c.embed = 5;
      c.hidden = 7;
      c.layers = 2;
      c.bidirectional = bidirectional;
      c.attention = attention;
      Generator init(1);
      Seq2Seq model(c, init);
      CHECK(c.parameter_count() == model.num_parameters());
    }
  Seq2SeqConfig c;
  c.source_vocab = c.target_vocab = 1000;
  c.hidden = 30000;  // config.json "hidden": 30000: 14 GB before this check
  CHECK_THROWS_WITH_AS(c.validate(),
                       "Seq2SeqConfig: the model would have 23454039000 parameters, more than the limit of 268435456 "
                       "(core/io/limits.hpp): embed 64, hidden 30000, layers 1, vocabularies 1000 and 1000",
                       Error);
  c.hidden = 1000000000;
  CHECK_THROWS_WITH_AS(c.validate(), "Seq2SeqConfig: hidden is 1000000000, more than the limit of 65536 (core/io/limits.hpp)",
                       Error);
  c.hidden = 8;
  c.layers = 1000000;
  CHECK_THROWS_WITH_AS(c.validate(), "Seq2SeqConfig: layers is 1000000, more than the limit of 64 (core/io/limits.hpp)", Error);
  c.layers = 1;
  c.target_vocab = std::int64_t{1} << 40;
  CHECK_THROWS_WITH_AS(c.validate(),
                       "Seq2SeqConfig: target_vocab is 1099511627776, more than the limit of 16777216 (core/io/limits.hpp)",
                       Error);
  // And the constructor checks before building anything.
  Generator init(1);
  CHECK_THROWS_AS(Seq2Seq(c, init), Error);
}

TEST_CASE("read_bounded_file: regular files only, and no larger than the limit") {
  const attend::testing::Scratch scratch("attend_limits");
  const std::string dir = scratch.dir.string();
  const std::string path = dir + "/text.txt";
  std::ofstream(path) << "0123456789";
  CHECK(limits::read_bounded_file(path, "op") == "0123456789");
  CHECK_THROWS_WITH_AS(limits::read_bounded_file(path, "op", 9),
                       ("op: " + path + ": the file has 10 bytes, more than the limit of 9 bytes (core/io/limits.hpp)").c_str(),
                       Error);
  CHECK_THROWS_WITH_AS(limits::read_bounded_file(dir, "op"), ("op: " + dir + ": not a regular file").c_str(), Error);
  CHECK_THROWS_WITH_AS(limits::read_bounded_file("/dev/zero", "op"), "op: /dev/zero: not a regular file", Error);
  const std::string fifo = dir + "/fifo";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  CHECK_THROWS_WITH_AS(limits::read_bounded_file(fifo, "op"), ("op: " + fifo + ": not a regular file").c_str(), Error);
  CHECK(limits::bytes_text(std::uint64_t{16} << 30) == "16 GiB");
  CHECK(limits::bytes_text(3 << 20) == "3.0 MiB");
  CHECK(limits::bytes_text(65536) == "65536 bytes");
}

TEST_CASE("printable: control characters, backslashes and invalid UTF-8 become escapes, letters stay") {
  CHECK(printable("<pad>\r") == "<pad>\\r");
  CHECK(printable("a\tb\nc\\d") == "a\\tb\\nc\\\\d");
  CHECK(printable("\x1b[31mred") == "\\x1b[31mred");
  CHECK(printable("\x7f\x01") == "\\x7f\\x01");
  CHECK(printable("caf\xc3\xa9 \xe6\xbc\xa2") == "caf\xc3\xa9 \xe6\xbc\xa2");  // é and 漢 unchanged
  CHECK(printable("caf\xe9") == "caf\\xe9");                                     // Latin-1, not UTF-8
  CHECK(printable("\xc2\x9b" "2J") == "\\u009b2J");                              // C1 CSI
  CHECK(printable("\xed\xa0\x80") == "\\xed\\xa0\\x80");                         // a surrogate
  CHECK(printable("\xc0\xaf") == "\\xc0\\xaf");                                  // overlong '/'
  CHECK(printable("\xe2\x82") == "\\xe2\\x82");                                  // truncated
  CHECK(printable("") == "");
}
