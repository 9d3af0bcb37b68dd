#pragma once
// Asking for memory before it is read: for runs of values that come from L3 or
// memory in an order the hardware's own prefetchers do not foresee (rows far
// apart, short runs), so that their misses overlap with the work before them.
#include <cstdint>

namespace attend {

inline constexpr std::int64_t kCacheLine = 64;  // bytes

// Asks, for reading, for the lines of p[0 .. n): a line every kCacheLine bytes
// from p, so all of them where p starts a line (tensor rows here do).
template <class T>
inline void prefetch_run(const T* p, std::int64_t n) {
  constexpr std::int64_t kStep = kCacheLine / static_cast<std::int64_t>(sizeof(T));
  for (std::int64_t i = 0; i < n; i += kStep) __builtin_prefetch(p + i, 0, 3);
}

}  // namespace attend
