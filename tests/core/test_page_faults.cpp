// Steady-state training touches no fresh memory: once a few steps on a batch
// of one shape have filled core/storage's cache, further steps reuse its blocks
// and add (almost) no minor page faults. A fresh page costs ~2.3 us here, so a
// step that faulted in its tensors afresh would spend much of its time on it.
// This counts faults (getrusage), which do not depend on the machine's load:
// it is not a timing test.
#include <doctest/doctest.h>

#include "core/storage.hpp"
#include "models/decode/decoding.hpp"
#include "models/seq2seq.hpp"
#include "models/train/trainer.hpp"

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
  auto optimizer = make_optimizer(OptimizerKind::Adam, model.parameters(), 1e-3);
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

// Beam search frees and allocates again a few hundred KiB per search (its
// hypotheses, the (N, V) log-probabilities); glibc gives such memory back to
// the system as soon as 128 KiB at the heap's top are free, so every search
// touched fresh pages, until memory::retain_freed_heap (which attend sets by
// itself at its first tensor: tests/core/test_retained_heap.cpp) had the heap
// keep them. Counts faults, not time.
TEST_CASE("repeated beam searches add no page faults once the heap keeps freed memory") {
  if (!memory::caching()) return;  // the sanitizer build: its allocator, not glibc's
  Seq2SeqConfig c;
  c.source_vocab = c.target_vocab = 1000;
  c.embed = 32;
  c.hidden = 64;
  c.attention = AttentionKind::Additive;
  Generator gen(4);
  Seq2Seq model(c, gen);
  model.eval();
  const Batch batch = random_batch(16, 20, 20, 1000, gen);
  DecodeOptions options;
  options.beam = 5;
  options.stop_at_eos = false;  // every search the same 35 steps
  auto faults_of_searches = [&](int searches) {
    const long f0 = memory::minor_page_faults();
    for (int i = 0; i < searches; ++i) CHECK(translate(model, batch, options).size() == 16);
    return memory::minor_page_faults() - f0;
  };
  // glibc's starting values, fixed: its thresholds otherwise rise by themselves
  // as large blocks are freed, which earlier tests in this process may have done.
  memory::retain_freed_heap(std::size_t{128} << 10);
  faults_of_searches(3);  // the storage cache and the heap fill
  const long before = faults_of_searches(5);
  memory::retain_freed_heap(std::size_t{32} << 20);
  faults_of_searches(3);
  const long after = faults_of_searches(5);
  MESSAGE("minor faults over 5 searches: ", before, " keeping 128 KiB (glibc's default), ", after, " keeping 32 MiB");
  CHECK(before > 100);  // the pages it saves are there to save
  CHECK(after < 10);
}
