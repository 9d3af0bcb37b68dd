#include "core/storage.hpp"

#include <cstdlib>
#include <mutex>
#include <new>
#include <unordered_map>
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
// Above this the cache frees blocks instead of keeping them.
constexpr std::size_t kMaxCachedBytes = std::size_t{4} << 30;

struct Cache {
  std::mutex mutex;
  std::unordered_map<std::size_t, std::vector<void*>> free_blocks;  // by rounded size
  std::size_t cached = 0;
  std::size_t live = 0;
  bool enabled = kCacheByDefault;

  void release_all() {
    for (auto& [size, blocks] : free_blocks)
      for (void* p : blocks) std::free(p);
    free_blocks.clear();
    cached = 0;
  }
  ~Cache() { release_all(); }
};

Cache& cache() {
  static Cache* c = new Cache();  // never destroyed: storages may outlive static destructors
  return *c;
}

std::size_t round_up(std::size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

}  // namespace

Storage::Storage(std::size_t bytes) : bytes_(bytes) {
  if (bytes == 0) return;
  std::size_t size = round_up(bytes);
  Cache& c = cache();
  {
    std::lock_guard lock(c.mutex);
    c.live += size;
    auto it = c.free_blocks.find(size);
    if (it != c.free_blocks.end() && !it->second.empty()) {
      data_ = it->second.back();
      it->second.pop_back();
      c.cached -= size;
      return;
    }
  }
  data_ = std::aligned_alloc(kAlign, size);
  if (data_ == nullptr) throw std::bad_alloc();
}

Storage::~Storage() {
  if (data_ == nullptr) return;
  std::size_t size = round_up(bytes_);
  Cache& c = cache();
  std::lock_guard lock(c.mutex);
  c.live -= size;
  if (c.enabled && c.cached + size <= kMaxCachedBytes) {
    c.free_blocks[size].push_back(data_);
    c.cached += size;
  } else {
    std::free(data_);
  }
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
}  // namespace memory

}  // namespace attend
