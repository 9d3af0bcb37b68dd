// Steady-state training touches no fresh memory: once a few steps on a batch
// of one shape have filled core/storage's cache, further steps reuse its blocks
// and add (almost) no minor page faults. A fresh page costs ~2.3 us here, so a
// step that faulted in its tensors afresh would spend much of its time on it.
// This counts faults (getrusage), which do not depend on the machine's load:
// it is not a timing test.
#include <doctest/doctest.h>

#include "core/storage.hpp"
#include "models/seq2seq.hpp"
#include "models/trainer.hpp"

using namespace attend;

namespace {

// A fixed batch of random sentences: B sentences of S source and T target tokens.
Batch random_batch(std::int64_t B, std::int64_t S, std::int64_t T, std::int64_t vocab, Generator& gen) {
  std::vector<EncodedPair> data(static_cast<std::size_t>(B));
  for (EncodedPair& p : data) {
    for (std::int64_t i = 0; i < S; ++i) p.source.push_back(4 + gen.randint(vocab - 4));
    for (std::int64_t i = 0; i + 1 < T; ++i) p.target.push_back(4 + gen.randint(vocab - 4));
  }
  std::vector<std::int64_t> ids(data.size());
  for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<std::int64_t>(i);
  return make_batch(data, ids);
}

struct Faults {
  long warmup, steady;  // minor faults over the warm-up steps, and over the steps after them
};

// Trains `warmup` then `steps` steps (forward, backward, clipping, Adam) on one batch.
Faults count_faults(AttentionKind attention, std::int64_t hidden, std::int64_t vocab, int warmup, int steps) {
  Seq2SeqConfig c;
  c.source_vocab = c.target_vocab = vocab;
  c.embed = 32;
  c.hidden = hidden;
  c.attention = attention;
  Generator gen(3);
  Seq2Seq model(c, gen);
  const Batch batch = random_batch(16, 12, 10, vocab, gen);
  auto optimizer = make_optimizer("adam", model.parameters(), 1e-3);
  const std::vector<Tensor> params = model.parameters();
  auto step = [&] {
    optimizer->zero_grad();
    Tensor loss = model.loss(batch);
    loss.backward();
    optim::clip_grad_norm(params, 5.0);
    optimizer->step();
  };
  const long f0 = memory::minor_page_faults();
  for (int i = 0; i < warmup; ++i) step();
  const long f1 = memory::minor_page_faults();
  for (int i = 0; i < steps; ++i) step();
  return {f1 - f0, memory::minor_page_faults() - f1};
}

}  // namespace

TEST_CASE("minor_page_faults counts the pages a process touches") {
  const long before = memory::minor_page_faults();
  CHECK(before > 0);
  // 4 MiB of fresh pages: ~1,000 faults of 4 KiB (fewer with huge pages, but some).
  std::vector<char> fresh(std::size_t{4} << 20);
  for (std::size_t i = 0; i < fresh.size(); i += 4096) fresh[i] = 1;
  CHECK(memory::minor_page_faults() > before);
}

TEST_CASE("steady-state training steps add no page faults") {
  if (!memory::caching()) return;  // the sanitizer build turns the cache off: every block is fresh heap
  // Large enough that the step's tensors are many pages (the (B*T, V) logits
  // block alone is 40 pages), small enough to run in a moment.
  for (const AttentionKind attention : {AttentionKind::Additive, AttentionKind::None}) {
    CAPTURE(static_cast<int>(attention));
    const int warmup = 3, steps = 20;
    const Faults f = count_faults(attention, 64, 1000, warmup, steps);
    MESSAGE("minor faults: ", f.warmup, " over ", warmup, " warm-up steps, ", f.steady, " over ", steps, " more");
    CHECK(f.warmup > 0);  // the first steps do touch fresh memory: the count sees it
    // Not one page per step: a few stray faults (the allocator's own
    // bookkeeping, the stack) are allowed over all 20 steps together.
    CHECK(f.steady < 10);
  }
}
