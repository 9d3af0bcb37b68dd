#pragma once
// Small objects that every op makes and frees (a tensor's TensorImpl and
// Storage, an autograd node) come from free lists kept per thread, instead of
// from malloc.
//
// Why: a training step at config S makes ~2,800 such objects in its forward
// and frees them in its backward. glibc's per-thread cache keeps only 7 blocks
// of a size, so the rest went through malloc's bins (_int_malloc, _int_free,
// unlink_chunk, malloc_consolidate, which `perf record` of `attend bench` at
// config S shows). The lists here keep what a step frees for the next step's forward.
//
// Blocks come in classes of 16 bytes up to kMaxBytes; larger requests go to
// operator new. Each list holds at most kMaxBytesPerClass bytes of blocks
// (max_blocks), so that a thread that frees what another made (a batch built
// on a loader thread) does not hoard them. The bound is in bytes, not blocks:
// an unbatched recurrence (bench/gradbench_lstm.sh) records tens of thousands
// of tiny ops per backward, all live at once, and a list shorter than that
// sent the rest through malloc's bins again. What a list keeps was live at
// once, so keeping it adds nothing to the step's peak. Under AddressSanitizer
// the lists are off, so that it sees every use after free.
#include <cstddef>
#include <memory>
#include <utility>

namespace attend::small_objects {

inline constexpr std::size_t kGrain = 16;      // class sizes are multiples of this
inline constexpr std::size_t kMaxBytes = 512;  // above this, operator new directly
inline constexpr std::size_t kMaxBytesPerClass = std::size_t{16} << 20;

// The most blocks the list of `bytes`' class keeps (kMaxBytesPerClass of them).
constexpr std::size_t max_blocks(std::size_t bytes) {
  return kMaxBytesPerClass / ((bytes == 0 ? 1 : (bytes + kGrain - 1) / kGrain) * kGrain);
}

// A block of at least `bytes`, aligned for any standard type (16 bytes).
void* allocate(std::size_t bytes);
// Returns a block from allocate(bytes), with the same `bytes`.
void deallocate(void* block, std::size_t bytes) noexcept;
// Blocks this thread holds for reuse, and whether the lists are on (off under
// AddressSanitizer): for tests.
std::size_t cached_blocks();
bool pooling();

// For std::allocate_shared (below): every block through the lists.
template <class T>
struct Allocator {
  static_assert(alignof(T) <= kGrain, "small_objects: over-aligned types need operator new");
  using value_type = T;
  Allocator() = default;
  template <class U>
  Allocator(const Allocator<U>&) noexcept {}
  T* allocate(std::size_t n) { return static_cast<T*>(small_objects::allocate(n * sizeof(T))); }
  void deallocate(T* p, std::size_t n) noexcept { small_objects::deallocate(p, n * sizeof(T)); }
  template <class U>
  bool operator==(const Allocator<U>&) const noexcept {
    return true;
  }
};

// std::make_shared, with the object and its count in one block from the lists.
template <class T, class... Args>
std::shared_ptr<T> make_shared(Args&&... args) {
  return std::allocate_shared<T>(Allocator<T>(), std::forward<Args>(args)...);
}

}  // namespace attend::small_objects
