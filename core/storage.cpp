#include "core/storage.hpp"

#include <sys/mman.h>
#include <sys/resource.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <iterator>
#include <list>
#include <map>
#include <mutex>
#include <new>

namespace attend {
namespace {

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kCacheByDefault = false;
#else
constexpr bool kCacheByDefault = true;
#endif

// Blocks are 64-byte aligned (a cache line, and enough for any SIMD load).
constexpr std::size_t kAlign = 64;
// Blocks from here up are mapped pages of their own (see storage.hpp); never
// under AddressSanitizer, which only watches the heap.
#if defined(__SANITIZE_ADDRESS__)
constexpr std::size_t kMapBytes = SIZE_MAX;
#else
constexpr std::size_t kMapBytes = std::size_t{256} << 10;
#endif
// A request takes a cached block of up to this many times its size.
constexpr std::size_t kMaxFitFactor = 2;
// The cache may always hold this much, even before any large step.
constexpr std::size_t kMinCacheBytes = std::size_t{1} << 20;

// The size class of a request: a multiple of 64 up to 1 KiB, then one of 8
// steps per power of two (e.g. 1024, 1152, 1280, ..., 1920, 2048, 2304, ...).
std::size_t size_class(std::size_t bytes) {
  if (bytes <= 1024) return (bytes + kAlign - 1) / kAlign * kAlign;
  std::size_t power = std::size_t{1} << (63 - __builtin_clzll(static_cast<unsigned long long>(bytes - 1)));
  std::size_t step = power / 8;
  return (bytes + step - 1) / step * step;
}

void* allocate_block(std::size_t size) {
  if (size >= kMapBytes) {
    void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    return p;
  }
  void* p = std::aligned_alloc(kAlign, size);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}

void free_block(void* p, std::size_t size) {
  if (size >= kMapBytes) ::munmap(p, size);
  else std::free(p);
}

struct Cache {
  // Cached blocks by size (for best fit) and in the order they were freed (for
  // eviction, oldest first); each entry of one points at its entry in the other.
  struct Block {
    void* data;
    std::size_t size;
  };
  std::list<Block> by_age;  // front: freed longest ago
  std::multimap<std::size_t, std::list<Block>::iterator> by_size;
  std::mutex mutex;
  std::size_t cached = 0, live = 0, peak_live = 0, peak_held = 0;
  bool enabled = kCacheByDefault;

  std::size_t limit() const { return std::max(peak_live, kMinCacheBytes); }

  // The smallest cached block of at least size bytes and at most kMaxFitFactor
  // times that, taken out of the cache; nullptr if there is none.
  void* take(std::size_t size, std::size_t& got) {
    auto it = by_size.lower_bound(size);
    if (it == by_size.end() || it->first > size * kMaxFitFactor) return nullptr;
    got = it->first;
    void* p = it->second->data;
    by_age.erase(it->second);
    by_size.erase(it);
    cached -= got;
    return p;
  }
  void evict_oldest() {
    const Block b = by_age.front();
    auto [first, last] = by_size.equal_range(b.size);
    for (auto it = first; it != last; ++it)
      if (it->second == by_age.begin()) {
        by_size.erase(it);
        break;
      }
    by_age.pop_front();
    cached -= b.size;
    free_block(b.data, b.size);
  }
  void put(void* p, std::size_t size) {
    if (!enabled || size > limit()) {
      free_block(p, size);
      return;
    }
    while (cached + size > limit()) evict_oldest();
    by_age.push_back({p, size});
    by_size.emplace(size, std::prev(by_age.end()));
    cached += size;
  }
  void release_all() {
    for (const Block& b : by_age) free_block(b.data, b.size);
    by_age.clear();
    by_size.clear();
    cached = 0;
  }
  void note_live() {
    peak_live = std::max(peak_live, live);
    peak_held = std::max(peak_held, live + cached);
  }
};

Cache& cache() {
  static Cache* c = new Cache();  // never destroyed: storages may outlive static destructors
  return *c;
}

}  // namespace

Storage::Storage(std::size_t bytes) : bytes_(bytes) {
  if (bytes == 0) return;
  const std::size_t size = size_class(bytes);
  Cache& c = cache();
  {
    std::lock_guard lock(c.mutex);
    std::size_t got = 0;
    if (void* p = c.take(size, got)) {
      data_ = p;
      capacity_ = got;
      c.live += got;
      c.note_live();
      return;
    }
  }
  data_ = allocate_block(size);  // outside the lock: fresh memory is the slow case
  capacity_ = size;
  std::lock_guard lock(c.mutex);
  c.live += size;
  c.note_live();
}

Storage::~Storage() {
  if (data_ == nullptr) return;
  Cache& c = cache();
  std::lock_guard lock(c.mutex);
  c.live -= capacity_;
  c.put(data_, capacity_);
}

namespace memory {
std::size_t cached_bytes() {
  std::lock_guard lock(cache().mutex);
  return cache().cached;
}
std::size_t live_bytes() {
  std::lock_guard lock(cache().mutex);
  return cache().live;
}
std::size_t peak_live_bytes() {
  std::lock_guard lock(cache().mutex);
  return cache().peak_live;
}
std::size_t peak_held_bytes() {
  std::lock_guard lock(cache().mutex);
  return cache().peak_held;
}
void reset_peaks() {
  std::lock_guard lock(cache().mutex);
  cache().peak_live = cache().live;
  cache().peak_held = cache().live + cache().cached;
}
void empty_cache() {
  std::lock_guard lock(cache().mutex);
  cache().release_all();
}
void set_caching(bool enabled) {
  std::lock_guard lock(cache().mutex);
  cache().enabled = enabled;
  if (!enabled) cache().release_all();
}
bool caching() {
  std::lock_guard lock(cache().mutex);
  return cache().enabled;
}
long minor_page_faults() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_minflt;
}
}  // namespace memory

}  // namespace attend
