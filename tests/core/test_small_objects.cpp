// core/small_objects: the per-thread free lists behind tensors' and nodes'
// small blocks. A freed block is handed out again for its size class, every
// block is aligned and whole, a list never grows past its cap (a thread that
// frees what another made), and objects made through it are constructed and
// destroyed as with std::make_shared. Under AddressSanitizer the lists are off
// (pooling() is false) and only the parts that hold either way run.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include "autograd/ops.hpp"
#include "core/random.hpp"
#include "core/small_objects.hpp"
#include "core/tensor.hpp"

using namespace attend;

namespace {
struct Counted {
  static inline int alive = 0;
  std::int64_t value;
  explicit Counted(std::int64_t v) : value(v) { ++alive; }
  ~Counted() { --alive; }
};
}  // namespace

TEST_CASE("small objects: a freed block comes back for a request of its class, and blocks are aligned and whole") {
  for (std::size_t bytes : {std::size_t{1}, std::size_t{16}, std::size_t{17}, std::size_t{144}, std::size_t{500},
                            small_objects::kMaxBytes}) {
    CAPTURE(bytes);
    void* a = small_objects::allocate(bytes);
    CHECK(reinterpret_cast<std::uintptr_t>(a) % 16 == 0);  // any standard type's alignment
    std::memset(a, 0xAB, bytes);  // every byte asked for is writable (ASan would see an overflow)
    small_objects::deallocate(a, bytes);
    // the same class: the block just freed, when the lists are on
    constexpr std::size_t kGrain = small_objects::kGrain;
    const std::size_t same_class = (bytes + kGrain - 1) / kGrain * kGrain;
    void* b = small_objects::allocate(same_class);
    std::memset(b, 0xCD, same_class);
    if (small_objects::pooling()) CHECK(b == a);
    small_objects::deallocate(b, same_class);
  }
  // Past kMaxBytes: operator new and delete, nothing kept.
  const std::size_t before = small_objects::cached_blocks();
  void* big = small_objects::allocate(small_objects::kMaxBytes + 1);
  std::memset(big, 0, small_objects::kMaxBytes + 1);
  small_objects::deallocate(big, small_objects::kMaxBytes + 1);
  CHECK(small_objects::cached_blocks() == before);
  small_objects::deallocate(nullptr, 16);  // does nothing
}

TEST_CASE("small objects: a thread that frees what another made keeps at most kMaxBytesPerClass of a class") {
  constexpr std::size_t kBytes = 48, kCount = small_objects::max_blocks(kBytes) + 500;
  static_assert(small_objects::max_blocks(kBytes) == (std::size_t{16} << 20) / 48);
  static_assert(small_objects::max_blocks(40) == small_objects::max_blocks(48));  // one class
  std::vector<void*> made(kCount);
  std::thread maker([&] {
    for (void*& p : made) p = small_objects::allocate(kBytes);
  });
  maker.join();
  std::size_t held = 0;
  std::thread freer([&] {
    for (void* p : made) small_objects::deallocate(p, kBytes);
    held = small_objects::cached_blocks();
  });
  freer.join();
  if (small_objects::pooling())
    CHECK(held == small_objects::max_blocks(kBytes));  // the other 500 went back to operator delete
  else
    CHECK(held == 0);
}

TEST_CASE("small objects: make_shared constructs, shares and destroys like std::make_shared") {
  {
    std::shared_ptr<Counted> a = small_objects::make_shared<Counted>(7);
    CHECK(Counted::alive == 1);
    CHECK(a->value == 7);
    std::weak_ptr<Counted> weak = a;
    std::shared_ptr<Counted> b = a;
    a.reset();
    CHECK(Counted::alive == 1);
    CHECK(b->value == 7);
    b.reset();
    CHECK(Counted::alive == 0);
    CHECK(weak.expired());  // the block stays until the weak count is gone too
  }
  CHECK(Counted::alive == 0);
}

TEST_CASE("small objects: a training-like loop of tensors and nodes reuses its blocks") {
  // Each turn makes the same ops: after the first, the lists hand the same
  // number of blocks back, so the count held between turns stays put.
  Generator gen(11);
  Tensor w = uniform({4, 3}, -1, 1, gen);
  w.requires_grad_();
  std::vector<std::size_t> held;
  for (int turn = 0; turn < 4; ++turn) {
    Tensor x = uniform({2, 4}, -1, 1, gen);
    Tensor loss = sum(tanh(matmul(x, w)));
    loss.backward();
    held.push_back(small_objects::cached_blocks());
  }
  if (small_objects::pooling()) {
    CHECK(held[1] > 0);
    CHECK(held[2] == held[1]);
    CHECK(held[3] == held[1]);
  }
  CHECK(w.grad().defined());
}
