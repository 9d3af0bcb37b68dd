#include "core/small_objects.hpp"

#include <array>
#include <new>

namespace attend::small_objects {
namespace {

// GCC and clang both define __SANITIZE_ADDRESS__ under -fsanitize=address (as
// core/storage.cpp relies on too).
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kPooling = false;
#else
constexpr bool kPooling = true;
#endif

constexpr std::size_t kClasses = kMaxBytes / kGrain;

// A free block holds the link to the next one in its first bytes.
struct FreeBlock {
  FreeBlock* next;
};

// This thread's lists, one per class: class c holds blocks of (c + 1) * 16
// bytes. A thread's thread_local objects are destroyed when it ends (the main
// thread's before any static object), and tensors may be freed after that:
// then their blocks go straight back to operator delete.
struct Lists {
  FreeBlock* head[kClasses] = {};
  std::size_t count[kClasses] = {};
  ~Lists();
};
thread_local bool lists_gone = false;  // trivially destructible: still readable after ~Lists
thread_local Lists lists;

Lists::~Lists() {
  lists_gone = true;
  for (std::size_t c = 0; c < kClasses; ++c)
    while (head[c] != nullptr) {
      FreeBlock* block = head[c];
      head[c] = block->next;
      ::operator delete(block);
    }
}

bool pooled(std::size_t bytes) { return kPooling && bytes <= kMaxBytes && !lists_gone; }
std::size_t class_of(std::size_t bytes) { return bytes == 0 ? 0 : (bytes - 1) / kGrain; }

// max_blocks of each class, computed once: deallocate runs for every tensor freed.
constexpr auto kMaxBlocks = [] {
  std::array<std::size_t, kClasses> most{};
  for (std::size_t c = 0; c < kClasses; ++c) most[c] = max_blocks((c + 1) * kGrain);
  return most;
}();

}  // namespace

void* allocate(std::size_t bytes) {
  if (!pooled(bytes)) return ::operator new(bytes);
  const std::size_t c = class_of(bytes);
  FreeBlock* block = lists.head[c];
  if (block == nullptr) return ::operator new((c + 1) * kGrain);  // every block of a class has its full size
  lists.head[c] = block->next;
  --lists.count[c];
  return block;
}

void deallocate(void* block, std::size_t bytes) noexcept {
  if (block == nullptr) return;
  if (!pooled(bytes)) return ::operator delete(block);
  const std::size_t c = class_of(bytes);
  if (lists.count[c] >= kMaxBlocks[c]) return ::operator delete(block);
  auto* free_block = static_cast<FreeBlock*>(block);
  free_block->next = lists.head[c];
  lists.head[c] = free_block;
  ++lists.count[c];
}

std::size_t cached_blocks() {
  if (lists_gone) return 0;
  std::size_t total = 0;
  for (std::size_t n : lists.count) total += n;
  return total;
}

bool pooling() { return kPooling; }

}  // namespace attend::small_objects
