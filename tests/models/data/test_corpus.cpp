// models/data/corpus: TSV reading with warnings, splits, length filters, batches and
// the reproducible epoch order.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <unistd.h>
#include <vector>

#include "core/error.hpp"
#include "core/random.hpp"
#include "models/data/corpus.hpp"
#include "tests/support/scratch.hpp"

using namespace attend;
using Ids = std::vector<std::int64_t>;
using Order = std::vector<std::vector<std::int64_t>>;

namespace {

std::vector<double> values(const Tensor& t) { return t.to_vector(); }

// n examples with source lengths spread over 1..20 and target lengths 0..24.
std::vector<EncodedPair> make_pairs(std::int64_t n, std::uint64_t seed) {
  Generator gen(seed);
  std::vector<EncodedPair> data;
  for (std::int64_t i = 0; i < n; ++i) {
    EncodedPair pair;
    pair.source.assign(static_cast<std::size_t>(1 + gen.randint(20)), 4 + i % 7);
    pair.target.assign(static_cast<std::size_t>(gen.randint(25)), 5 + i % 5);
    data.push_back(pair);
  }
  return data;
}

std::vector<std::int64_t> flatten(const Order& order) {
  std::vector<std::int64_t> all;
  for (const auto& batch : order) all.insert(all.end(), batch.begin(), batch.end());
  return all;
}

}  // namespace

TEST_CASE("parse_tsv keeps good lines and reports each bad one with name:line") {
  const std::string content =
      "hello\tbonjour\n"
      "\n"
      "no tab here\n"
      "a\tb\tc\n"
      "\tcible\n"
      "source\t  \n"
      "bad\xC3\tx\n"
      "crlf\tok\r\n"
      "\u00E9t\u00E9\t\u00E9t\u00E9 chaud\n"
      "last\tdernier";  // no final newline
  ParallelText text = parse_tsv(content, "corpus.tsv");
  CHECK(text.pairs == std::vector<SentencePair>{{"hello", "bonjour"},
                                                {"crlf", "ok"},
                                                {"\u00E9t\u00E9", "\u00E9t\u00E9 chaud"},
                                                {"last", "dernier"}});
  CHECK(text.skipped == 6);
  CHECK(text.warnings == std::vector<std::string>{
                             "corpus.tsv:2: empty line; line skipped",
                             "corpus.tsv:3: no tab between source and target; line skipped",
                             "corpus.tsv:4: more than one tab; line skipped",
                             "corpus.tsv:5: empty source; line skipped",
                             "corpus.tsv:6: empty target; line skipped",
                             "corpus.tsv:7: invalid UTF-8; line skipped",
                         });
}

TEST_CASE("parse_tsv handles empty input, a byte order mark and a lone newline") {
  ParallelText empty = parse_tsv("", "e.tsv");
  CHECK(empty.pairs.empty());
  CHECK(empty.skipped == 0);
  CHECK(parse_tsv("\xEF\xBB\xBF" "a\tb\n", "bom.tsv").pairs == std::vector<SentencePair>{{"a", "b"}});
  ParallelText newline = parse_tsv("\n", "n.tsv");
  CHECK(newline.warnings == std::vector<std::string>{"n.tsv:1: empty line; line skipped"});
}

TEST_CASE("strict parsing throws at the first bad line") {
  CHECK_THROWS_WITH_AS(parse_tsv("a\tb\n\nc\td\n", "corpus.tsv", true), "read_tsv: corpus.tsv:2: empty line", Error);
  CHECK_THROWS_WITH_AS(parse_tsv("a\tb\nc d\n", "x.tsv", true),
                       "read_tsv: x.tsv:2: no tab between source and target", Error);
  CHECK_THROWS_WITH_AS(parse_tsv("\xFF\tb\n", "x.tsv", true), "read_tsv: x.tsv:1: invalid UTF-8", Error);
  CHECK(parse_tsv("a\tb\nc\td\n", "ok.tsv", true).pairs.size() == 2);
}

TEST_CASE("read_tsv reads a file and names it in warnings and errors") {
  const attend::testing::Scratch scratch("attend_corpus");
  const std::string path = scratch.path("pairs.tsv");
  std::ofstream(path, std::ios::binary) << "one\tun\nbroken\ntwo\tdeux\n";
  ParallelText text = read_tsv(path);
  CHECK(text.pairs == std::vector<SentencePair>{{"one", "un"}, {"two", "deux"}});
  CHECK(text.warnings == std::vector<std::string>{path + ":2: no tab between source and target; line skipped"});
  CHECK_THROWS_WITH_AS(read_tsv(path, true), ("read_tsv: " + path + ":2: no tab between source and target").c_str(),
                       Error);
  std::filesystem::remove(path);
  CHECK_THROWS_WITH_AS(read_tsv(path), ("read_tsv: " + path + ": cannot open: No such file or directory").c_str(), Error);
}

TEST_CASE("split_indices is a seeded partition of the indices") {
  Split split = split_indices(10, 0.3, 42);
  CHECK(split.valid.size() == 3);
  CHECK(split.train.size() == 7);
  CHECK(std::is_sorted(split.valid.begin(), split.valid.end()));
  CHECK(std::is_sorted(split.train.begin(), split.train.end()));
  std::set<std::int64_t> all(split.valid.begin(), split.valid.end());
  all.insert(split.train.begin(), split.train.end());
  CHECK(all.size() == 10);
  CHECK(*all.begin() == 0);
  CHECK(*all.rbegin() == 9);
  Split again = split_indices(10, 0.3, 42);
  CHECK(again.valid == split.valid);
  CHECK(again.train == split.train);
  // Other seeds choose other validation sets (at least one of these differs).
  bool differs = false;
  for (std::uint64_t seed = 1; seed <= 5; ++seed) differs = differs || split_indices(10, 0.3, seed).valid != split.valid;
  CHECK(differs);
  CHECK(split_indices(10, 0.0, 1).valid.empty());
  CHECK(split_indices(10, 1.0, 1).train.empty());
  CHECK(split_indices(0, 0.5, 1).train.empty());
  CHECK(split_indices(7, 0.5, 1).valid.size() == 4);  // round(3.5) = 4
  CHECK_THROWS_WITH_AS(split_indices(10, 1.5, 1), "split_indices: valid_fraction must be in [0, 1], got 1.5", Error);
  CHECK(subset(std::vector<std::string>{"a", "b", "c"}, {2, 0}) == std::vector<std::string>{"c", "a"});
}

TEST_CASE("encode_pairs tokenizes and maps both sides, unknown tokens to <unk>") {
  Vocabulary src = Vocabulary::from_tokens({"<pad>", "<unk>", "<s>", "</s>", "the", "cat", "."});
  Vocabulary tgt = Vocabulary::from_tokens({"<pad>", "<unk>", "<s>", "</s>", "le", "chat", "."});
  std::vector<EncodedPair> encoded = encode_pairs({{"The cat.", "Le chat."}, {"dog", "chien"}}, src, tgt,
                                                  {.lowercase = true, .split_elision = true});
  REQUIRE(encoded.size() == 2);
  CHECK(encoded[0].source == Ids{4, 5, 6});
  CHECK(encoded[0].target == Ids{4, 5, 6});
  CHECK(encoded[1].source == Ids{1});
  CHECK(encoded[1].target == Ids{1});
}

TEST_CASE("filter_by_length applies the limits to both sides") {
  std::vector<EncodedPair> pairs = {{{4}, {5}}, {{4, 4, 4}, {5}}, {{4}, {5, 5, 5, 5}}, {{}, {5}}, {{4, 4}, {}}};
  std::int64_t dropped = -1;
  std::vector<EncodedPair> kept = filter_by_length(pairs, {.min_tokens = 1, .max_tokens = 3}, &dropped);
  REQUIRE(kept.size() == 2);
  CHECK(kept[0].source == Ids{4});
  CHECK(kept[1].source == Ids{4, 4, 4});
  CHECK(dropped == 3);
  CHECK(filter_by_length(pairs, {.min_tokens = 0, .max_tokens = 10}).size() == 5);
  CHECK(within_limits(pairs[3], {.min_tokens = 0, .max_tokens = 1}));
  CHECK_FALSE(within_limits(pairs[3], {.min_tokens = 1, .max_tokens = 1}));
  CHECK_THROWS_WITH_AS(filter_by_length(pairs, {.min_tokens = 4, .max_tokens = 3}),
                       "filter_by_length: min_tokens 4 is greater than max_tokens 3", Error);
}

TEST_CASE("make_batch pads, masks and shifts the target, by hand") {
  const std::vector<EncodedPair> data = {{{5, 6, 7}, {8, 9}}, {{4}, {}}, {{5, 5}, {6, 7, 8}}};
  const Ids ids{0, 1, 2};
  Batch batch = make_batch(data, ids);
  CHECK(batch.size() == 3);
  CHECK(batch.source.shape == Shape{3, 3});
  CHECK(batch.source.values == Ids{5, 6, 7, /**/ 4, 0, 0, /**/ 5, 5, 0});
  CHECK(batch.source_lengths == Ids{3, 1, 2});
  CHECK(batch.source_mask.shape() == Shape{3, 3});
  CHECK(batch.source_mask.dtype() == Float32);
  CHECK(values(batch.source_mask) == std::vector<double>{1, 1, 1, /**/ 1, 0, 0, /**/ 1, 1, 0});
  CHECK(batch.decoder_input.shape == Shape{3, 4});
  CHECK(batch.decoder_input.values == Ids{2, 8, 9, 0, /**/ 2, 0, 0, 0, /**/ 2, 6, 7, 8});
  CHECK(batch.decoder_target.shape == Shape{3, 4});
  CHECK(batch.decoder_target.values == Ids{8, 9, 3, 0, /**/ 3, 0, 0, 0, /**/ 6, 7, 8, 3});
  CHECK(batch.target_lengths == Ids{3, 1, 4});
  CHECK(values(batch.target_mask) == std::vector<double>{1, 1, 1, 0, /**/ 1, 0, 0, 0, /**/ 1, 1, 1, 1});
  CHECK(batch.target_tokens == 8);
  CHECK(batch.example_ids == ids);
}

TEST_CASE("make_batch options: source </s>, float64 masks, one-token sentences") {
  const std::vector<EncodedPair> data = {{{5, 6, 7}, {8, 9}}, {{4}, {}}};
  Batch batch = make_batch(data, Ids{1, 0}, {.mask_dtype = Float64, .source_eos = true});
  CHECK(batch.source.shape == Shape{2, 4});
  CHECK(batch.source.values == Ids{4, 3, 0, 0, /**/ 5, 6, 7, 3});
  CHECK(batch.source_lengths == Ids{2, 4});
  CHECK(batch.source_mask.dtype() == Float64);
  CHECK(values(batch.source_mask) == std::vector<double>{1, 1, 0, 0, /**/ 1, 1, 1, 1});
  CHECK(batch.target_mask.dtype() == Float64);
  CHECK(batch.example_ids == Ids{1, 0});

  Batch one = make_batch(data, Ids{1});  // a one-token source, an empty target
  CHECK(one.source.shape == Shape{1, 1});
  CHECK(one.source.values == Ids{4});
  CHECK(values(one.source_mask) == std::vector<double>{1});
  CHECK(one.decoder_input.values == Ids{2});
  CHECK(one.decoder_target.values == Ids{3});
  CHECK(one.target_tokens == 1);
}

TEST_CASE("make_batch rejects empty batches, bad indices and empty sources") {
  const std::vector<EncodedPair> data = {{{5}, {6}}, {{}, {6}}};
  CHECK_THROWS_WITH_AS(make_batch(data, Ids{}), "make_batch: no examples", Error);
  CHECK_THROWS_WITH_AS(make_batch(data, Ids{0, 2}), "make_batch: example 2 is out of range for 2 examples", Error);
  CHECK_THROWS_WITH_AS(make_batch(data, Ids{0, 1}), "make_batch: example 1 has an empty source", Error);
}

TEST_CASE("epoch_order covers every example once, in bounded batches, reproducibly") {
  const std::vector<EncodedPair> data = make_pairs(203, 5);
  BatchingOptions options{.batch_size = 10, .chunk_batches = 4, .shuffle = true};
  Order order = epoch_order(data, options, 99, 0);
  std::vector<std::int64_t> all = flatten(order);
  std::sort(all.begin(), all.end());
  Ids expected(203);
  for (std::int64_t i = 0; i < 203; ++i) expected[static_cast<std::size_t>(i)] = i;
  CHECK(all == expected);
  for (const auto& batch : order) {
    CHECK(!batch.empty());
    CHECK(batch.size() <= 10);
  }
  // 203 = 5 chunks of 40 (4 batches each) and a chunk of 3 (one batch).
  CHECK(order.size() == 21);
  // The order is a function of (seed, epoch) alone.
  CHECK(epoch_order(data, options, 99, 0) == order);
  CHECK(epoch_order(data, options, 99, 1) != order);
  CHECK(epoch_order(data, options, 98, 0) != order);
  CHECK(epoch_order(data, options, 99, 1) == epoch_order(data, options, 99, 1));
}

TEST_CASE("epoch_order buckets by source length so padding stays small") {
  const std::vector<EncodedPair> data = make_pairs(200, 11);
  // One chunk holds everything: the batches are consecutive runs of the sorted
  // order, so their source-length ranges do not overlap.
  Order order = epoch_order(data, {.batch_size = 10, .chunk_batches = 20, .shuffle = true}, 3, 2);
  std::vector<std::pair<std::size_t, std::size_t>> ranges;
  std::int64_t bucketed_padding = 0, random_padding = 0;
  for (const auto& batch : order) {
    std::size_t lo = 1000, hi = 0;
    for (std::int64_t i : batch) {
      lo = std::min(lo, data[static_cast<std::size_t>(i)].source.size());
      hi = std::max(hi, data[static_cast<std::size_t>(i)].source.size());
    }
    ranges.emplace_back(lo, hi);
    for (std::int64_t i : batch) bucketed_padding += static_cast<std::int64_t>(hi - data[static_cast<std::size_t>(i)].source.size());
  }
  std::sort(ranges.begin(), ranges.end());
  for (std::size_t k = 1; k < ranges.size(); ++k) CHECK(ranges[k - 1].second <= ranges[k].first);
  // Without bucketing (corpus order, lengths random) the padding is far larger.
  for (const auto& batch : epoch_order(data, {.batch_size = 10, .chunk_batches = 20, .shuffle = false}, 3, 2)) {
    std::size_t hi = 0;
    for (std::int64_t i : batch) hi = std::max(hi, data[static_cast<std::size_t>(i)].source.size());
    for (std::int64_t i : batch) random_padding += static_cast<std::int64_t>(hi - data[static_cast<std::size_t>(i)].source.size());
  }
  CHECK(bucketed_padding * 5 < random_padding);
}

TEST_CASE("epoch_order without shuffle keeps the corpus order") {
  const std::vector<EncodedPair> data = make_pairs(7, 1);
  CHECK(epoch_order(data, {.batch_size = 3, .chunk_batches = 1, .shuffle = false}, 5, 9) ==
        Order{{0, 1, 2}, {3, 4, 5}, {6}});
  CHECK(epoch_order({}, {.batch_size = 3, .chunk_batches = 1, .shuffle = true}, 5, 0).empty());
  CHECK_THROWS_WITH_AS(epoch_order(data, {.batch_size = 0, .chunk_batches = 1, .shuffle = true}, 5, 0),
                       "epoch_order: batch_size must be at least 1, got 0", Error);
  CHECK_THROWS_WITH_AS(epoch_order(data, {.batch_size = 2, .chunk_batches = 1, .shuffle = true}, 5, -1),
                       "epoch_order: negative epoch -1", Error);
}

TEST_CASE("BatchIterator resumes mid-epoch with the same batches") {
  const std::vector<EncodedPair> data = make_pairs(57, 8);
  const BatchingOptions options{.batch_size = 4, .chunk_batches = 3, .shuffle = true};
  BatchIterator full(data, options, 1234, 3);
  CHECK(full.size() == static_cast<std::int64_t>(epoch_order(data, options, 1234, 3).size()));
  Order seen;
  while (!full.done()) {
    Batch b = full.next();
    CHECK(b.source.shape[0] == static_cast<std::int64_t>(b.example_ids.size()));
    seen.push_back(b.example_ids);
  }
  CHECK(seen == full.order());
  CHECK(full.position() == full.size());
  CHECK_THROWS_WITH_AS(full.next(), fmt::format("BatchIterator::next: the epoch's {} batches are done", full.size()).c_str(),
                       Error);

  const std::int64_t resume_at = 5;
  BatchIterator resumed(data, options, 1234, 3, resume_at);
  CHECK(resumed.position() == resume_at);
  Order rest;
  while (!resumed.done()) rest.push_back(resumed.next().example_ids);
  CHECK(rest == Order(seen.begin() + resume_at, seen.end()));
  CHECK_THROWS_WITH_AS(BatchIterator(data, options, 1234, 3, 100),
                       fmt::format("BatchIterator: start_batch 100 is out of range for an epoch of {} batches",
                                   full.size())
                           .c_str(),
                       Error);
}
