#include "core/storage.hpp"

#include <sys/mman.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <sys/resource.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <utility>
#include <vector>

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

// Size class k <-> its size: classes 0..15 are 64, 128, ..., 1024; above, 8 per
// doubling: 1152, 1280, ..., 2048 (classes 16..23), 2304, ... Every block the
// cache holds has a class size (blocks are allocated at size_class()).
constexpr std::size_t kSmallClasses = 1024 / kAlign;
constexpr std::size_t kClasses = kSmallClasses + 8 * (64 - 10);

std::size_t class_index(std::size_t size) {  // size: a size class
  if (size <= 1024) return size / kAlign - 1;
  const int k = 63 - __builtin_clzll(static_cast<unsigned long long>(size - 1));  // 2^k < size <= 2^(k+1)
  const std::size_t power = std::size_t{1} << k;
  return kSmallClasses + static_cast<std::size_t>(k - 10) * 8 + (size - power) / (power / 8) - 1;
}

std::size_t class_size(std::size_t index) {
  if (index < kSmallClasses) return (index + 1) * kAlign;
  const std::size_t k = 10 + (index - kSmallClasses) / 8, j = (index - kSmallClasses) % 8 + 1;
  const std::size_t power = std::size_t{1} << k;
  return power + j * (power / 8);
}

struct Cache {
  // Cached blocks, one list per size class, in the order they were freed (the
  // back freed last): a request takes the last-freed block of the smallest
  // class that fits (its bytes are likeliest still in the CPU's cache), and
  // eviction takes the least recently freed block of all (the smallest age).
  // The lists keep their capacity, so a steady state allocates nothing here.
  struct Block {
    void* data;
    std::uint64_t age;
  };
  std::vector<std::vector<Block>> classes = std::vector<std::vector<Block>>(kClasses);
  std::uint64_t next_age = 0;
  std::mutex mutex;
  std::size_t cached = 0, live = 0, peak_live = 0, peak_held = 0;
  bool enabled = kCacheByDefault;

  std::size_t limit() const { return std::max(peak_live, kMinCacheBytes); }

  // The last-freed block of the smallest class of at least size bytes and at
  // most kMaxFitFactor times that, taken out of the cache; nullptr if there is none.
  void* take(std::size_t size, std::size_t& got) {
    for (std::size_t k = class_index(size); k < kClasses && class_size(k) <= size * kMaxFitFactor; ++k) {
      std::vector<Block>& list = classes[k];
      if (list.empty()) continue;
      got = class_size(k);
      void* p = list.back().data;
      list.pop_back();
      cached -= got;
      return p;
    }
    return nullptr;
  }
  // Evictions are rare (the cache may hold as much as the peak of live bytes),
  // so finding the oldest block by scanning the classes' oldest is cheap enough.
  void evict_oldest() {
    std::size_t oldest = kClasses;
    for (std::size_t k = 0; k < kClasses; ++k)
      if (!classes[k].empty() && (oldest == kClasses || classes[k].front().age < classes[oldest].front().age))
        oldest = k;
    std::vector<Block>& list = classes[oldest];
    const std::size_t size = class_size(oldest);
    free_block(list.front().data, size);
    list.erase(list.begin());
    cached -= size;
  }
  void put(void* p, std::size_t size) {
    if (!enabled || size > limit()) {
      free_block(p, size);
      return;
    }
    while (cached + size > limit()) evict_oldest();
    classes[class_index(size)].push_back({p, next_age++});
    cached += size;
  }
  void release_all() {
    for (std::size_t k = 0; k < kClasses; ++k) {
      for (const Block& b : classes[k]) free_block(b.data, class_size(k));
      classes[k].clear();
    }
    cached = 0;
  }
  void note_live() {
    peak_live = std::max(peak_live, live);
    peak_held = std::max(peak_held, live + cached);
  }
};

// malloc's thresholds (memory::retain_freed_heap): the library's default is set
// once, at the first tensor allocation, unless the program chose first, by
// calling retain_freed_heap or through glibc's environment variables.
constexpr std::size_t kRetainedHeapBytes = std::size_t{32} << 20;
std::mutex heap_choice_mutex;
bool heap_chosen = false;

void set_malloc_thresholds(std::size_t bytes) {
#if defined(__GLIBC__) && !defined(__SANITIZE_ADDRESS__)
  const int n = static_cast<int>(std::min<std::size_t>(bytes, std::size_t{1} << 30));
  mallopt(M_TRIM_THRESHOLD, n);
  mallopt(M_MMAP_THRESHOLD, n);
#else
  (void)bytes;
#endif
}

bool environment_sets_malloc_thresholds() {
  for (const char* name : {"MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_"})
    if (std::getenv(name) != nullptr) return true;
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  return tunables != nullptr && (std::strstr(tunables, "malloc.trim_threshold") != nullptr ||
                                 std::strstr(tunables, "malloc.mmap_threshold") != nullptr);
}

void retain_freed_heap_by_default() {
  const std::lock_guard lock(heap_choice_mutex);
  if (heap_chosen) return;
  heap_chosen = true;
  if (!environment_sets_malloc_thresholds()) set_malloc_thresholds(kRetainedHeapBytes);
}

Cache& cache() {
  // never destroyed: storages may outlive static destructors
  static Cache* c = (retain_freed_heap_by_default(), new Cache());
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

Storage::Storage(void* data, std::size_t bytes, std::shared_ptr<void> owner)
    : data_(data), bytes_(bytes), owner_(std::move(owner)) {}

Storage::~Storage() {
  if (data_ == nullptr || owner_) return;  // owner_'s release frees memory owned elsewhere
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
void retain_freed_heap(std::size_t bytes) {
  const std::lock_guard lock(heap_choice_mutex);
  heap_chosen = true;
  set_malloc_thresholds(bytes);
}
long minor_page_faults() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_minflt;
}
}  // namespace memory

}  // namespace attend
