#pragma once
// Storage: the bytes behind one or more tensors, and the caching allocator.
//
// Freed storage goes back to a cache and is handed out again: a training step
// allocates much the same sizes every time, and every fresh page costs a page
// fault, so after the first steps little new memory is touched (`attend bench`
// prints the minor page faults of its timed steps).
//
// The cache is bounded, because bucketed batches vary in shape and a cache
// keyed by exact size would keep a block for every size ever seen, many times
// the largest step's memory:
//   - blocks come in size classes, 8 per doubling (at most 12.5% rounding), and a
//     request may take any cached block up to twice its size;
//   - the cache holds at most as many bytes as the peak of live bytes (the
//     largest step so far), so live + cached stays under twice that peak; a block
//     freed into a full cache evicts the least recently freed ones first;
//   - blocks of 256 KiB and more are mapped and unmapped directly (mmap), so
//     what the cache gives back really leaves the process.
#include <cstddef>
#include <memory>

namespace attend {

class Storage {
 public:
  explicit Storage(std::size_t bytes);
  // Memory that someone else owns (a NumPy array's buffer, shared by the Python
  // module): `owner` keeps it alive as long as this storage lives, and dropping
  // `owner` is all the release there is; nothing is allocated or cached.
  Storage(void* data, std::size_t bytes, std::shared_ptr<void> owner);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() { return data_; }
  const void* data() const { return data_; }
  std::size_t bytes() const { return bytes_; }

 private:
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
  std::size_t capacity_ = 0;  // the block's real size (a size class, or a larger cached block)
  std::shared_ptr<void> owner_;  // set for memory owned elsewhere
};

namespace memory {
// Bytes held in the cache, ready for reuse.
std::size_t cached_bytes();
// Bytes handed out to live storages (block sizes).
std::size_t live_bytes();
// The largest live_bytes() so far, and the largest live + cached so far.
std::size_t peak_live_bytes();
std::size_t peak_held_bytes();
// Starts both peaks afresh from the current values.
void reset_peaks();
// Returns every cached block to the system.
void empty_cache();
// Turns the cache on or off (off under AddressSanitizer, so that it can see
// use-after-free bugs). Turning it off empties it.
void set_caching(bool enabled);
bool caching();
// Has malloc keep up to `bytes` of freed heap memory for reuse, and serve
// requests below `bytes` from the heap, rather than glibc's defaults: those
// give memory back to the system whenever 128 KiB at the top of the heap are
// free, and map larger blocks afresh, so a loop that frees and allocates again
// a few hundred KiB per turn (beam search's hypotheses and per-search buffers)
// touches fresh pages, and takes their page faults, every time. What that costs
// is `attend bench --no-train`'s "beam" line run as it is and with glibc's
// defaults (MALLOC_TRIM_THRESHOLD_=131072 MALLOC_MMAP_THRESHOLD_=131072).
// The process then holds up to `bytes` more than it uses. attend sets 32 MiB by
// itself at its first tensor allocation, unless the program chose before: by
// calling this, or with glibc's MALLOC_TRIM_THRESHOLD_, MALLOC_MMAP_THRESHOLD_
// or GLIBC_TUNABLES=glibc.malloc.{trim,mmap}_threshold. glibc cannot tell what
// mallopt was given, so a program that calls mallopt for these two itself does
// it after its first tensor. Tensors (the cache above) do not go through
// malloc's thresholds. Does nothing where malloc is not glibc's, or is a
// sanitizer's.
void retain_freed_heap(std::size_t bytes);
// Minor page faults of this process so far (getrusage's ru_minflt): how many
// fresh pages it has touched. A steady-state training step should add ~none.
long minor_page_faults();
}  // namespace memory

}  // namespace attend
