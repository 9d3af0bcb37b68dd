// core/storage's cache is bounded: memory held by a training run (live blocks
// plus the cache) does not grow with the number of steps, although bucketed
// batches come in ever new shapes. (An exact-size cache once kept a block for
// every size it had seen: ~1 GB after 30 steps of the toy run, ~1.7 GB after 90.)
#include <doctest/doctest.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "core/storage.hpp"
#include "core/tensor.hpp"
#include "models/data/toy_language.hpp"
#include "models/train/trainer.hpp"

using namespace attend;

namespace {

struct Held {
  std::size_t live = 0, held = 0;
};

// Trains a fresh model for `steps` steps; the peaks of live and held bytes during it.
Held train_steps(std::int64_t steps) {
  ToyCorpusOptions co;
  co.n = 400;
  co.min_len = 3;
  co.max_len = 24;  // many lengths, so many batch shapes
  co.seed = 7;
  std::vector<ToySentence> sentences = toy_corpus(co);
  TokenCounts src, tgt;
  for (const auto& s : sentences) {
    count_tokens(src, s.source);
    count_tokens(tgt, s.target);
  }
  Vocabulary source = Vocabulary::build(src), target = Vocabulary::build(tgt);
  std::vector<EncodedPair> train, valid;
  for (const auto& s : sentences) train.push_back({source.encode(s.source), target.encode(s.target)});
  Seq2SeqConfig c;
  c.source_vocab = source.size();
  c.target_vocab = target.size();
  c.embed = 16;
  c.hidden = 48;
  Generator init(1);
  Seq2Seq model(c, init);
  TrainOptions o;
  o.batch = 24;
  o.epochs = 1000;
  o.max_steps = steps;
  o.bleu_sentences = 0;
  o.lr = 0.01;
  o.out_dir.clear();
  memory::empty_cache();
  memory::reset_peaks();
  Trainer t(model, target, train, valid, o);
  t.run();
  return {memory::peak_live_bytes(), memory::peak_held_bytes()};
}

}  // namespace

TEST_CASE("memory held while training does not grow with the number of steps") {
  if (!memory::caching()) return;  // the sanitizer build turns the cache off: nothing to bound
  const std::int64_t n = 17;  // one epoch: 400 pairs in batches of 24
  const Held one = train_steps(n);
  const Held three = train_steps(3 * n);
  MESSAGE("peak live ", one.live, " / ", three.live, " bytes, peak held ", one.held, " / ", three.held);
  REQUIRE(one.live > (std::size_t{2} << 20));  // large enough that the cache's 1 MiB floor does not matter
  // The cache never holds more than the peak of live bytes...
  CHECK(one.held <= 2 * one.live);
  CHECK(three.held <= 2 * three.live);
  // ...and the peak is the largest step's, whatever the number of steps.
  CHECK(three.held <= one.held + one.held / 5);
}

TEST_CASE("the cache hands out the smallest cached block that fits, up to twice the size asked for") {
  if (!memory::caching()) return;  // the sanitizer build turns the cache off
  memory::empty_cache();
  const void* small = nullptr;
  const void* big = nullptr;
  {
    Tensor a = empty({1000});  // 4,000 bytes: the 4,096 class
    Tensor b = empty({4000});  // 16,000 bytes: the 16,384 class
    small = a.raw_data();
    big = b.raw_data();
  }
  {
    Tensor c = empty({3000});  // 12,000 bytes (12,288): the 16,384 block fits, the 4,096 one does not
    CHECK(c.raw_data() == big);
  }
  {
    Tensor d = empty({100});  // 400 bytes: both cached blocks are over twice as large
    CHECK(d.raw_data() != small);
    CHECK(d.raw_data() != big);
  }
  Tensor e = empty({900});  // 3,600 bytes (3,840): the 4,096 block, not the 16,384 one
  CHECK(e.raw_data() == small);
}

// Also run by the sanitizer build, which turns the cache on just for this: the
// cache's own bookkeeping (size classes, best fit, eviction) under ASan and UBSan.
TEST_CASE("the cache stays within its bound over many sizes, evicting as it must") {
  const bool was_caching = memory::caching();
  memory::set_caching(true);
  memory::empty_cache();
  memory::reset_peaks();
  const std::size_t live_before = memory::live_bytes();
  {
    std::vector<Tensor> ring(8);
    for (std::int64_t i = 0; i < 3000; ++i) {
      const std::int64_t n = (i * 7919) % 300000 + 1;  // 4 bytes to 1.2 MB, in a scattered order
      ring[static_cast<std::size_t>(i % 8)] = empty({n});
      ring[static_cast<std::size_t>(i % 8)].data<float>()[n - 1] = 1.0f;  // the block is at least n floats
      const std::size_t bound = std::max(memory::peak_live_bytes(), std::size_t{1} << 20);
      REQUIRE(memory::cached_bytes() <= bound);
    }
  }
  CHECK(memory::live_bytes() == live_before);
  CHECK(memory::cached_bytes() > 0);
  memory::empty_cache();
  CHECK(memory::cached_bytes() == 0);
  memory::set_caching(was_caching);
}

TEST_CASE("a storage over memory owned elsewhere uses it as it is and only drops its owner") {
  // The Python module's from_numpy: the array's buffer, kept alive by its owner.
  auto buffer = std::make_shared<std::vector<float>>(std::vector<float>{1, 2, 3, 4, 5, 6});
  std::weak_ptr<std::vector<float>> watch = buffer;
  const std::size_t live = memory::live_bytes(), cached = memory::cached_bytes();
  {
    auto impl = std::make_shared<TensorImpl>();
    impl->shape = Shape{2, 3};
    impl->storage = std::make_shared<Storage>(buffer->data(), 6 * sizeof(float), buffer);
    float* data = buffer->data();
    buffer.reset();  // the storage's owner is now the only reference
    Tensor t(impl);
    CHECK(t.data<float>() == data);  // shared, not copied
    t.mul_(2.0);
    CHECK(data[5] == 12.0f);
    CHECK(memory::live_bytes() == live);  // nothing allocated for it
    CHECK_FALSE(watch.expired());
  }
  CHECK(watch.expired());                    // the owner went with the last tensor
  CHECK(memory::cached_bytes() == cached);   // and the memory did not enter the cache
}
