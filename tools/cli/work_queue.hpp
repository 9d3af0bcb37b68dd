// Jobs on a few threads at once: attend translate --workers decodes its batches
// this way, each worker with its own copy of the models.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>

namespace attend::tools {

// Runs job(k, w) for k = 0, 1, ..., n-1 at once, job k on worker w = k (the
// caller's thread is worker 0), and rethrows the first error once all end.
void run_at_once(std::size_t n, const std::function<void(std::size_t k, std::size_t worker)>& job);

// Runs job(k, w) for every k of `order` on `workers` threads (w: the thread's
// index, the caller's thread is worker 0). A worker takes the next job of
// `order` as soon as it is free, so no worker waits for another's slower job;
// the job starts once the bytes[] of the jobs running, with its own, stay
// within `limit` (a job alone always may start). After an error no job
// starts; the first error is rethrown once every thread has stopped.
void run_within_memory(std::span<const std::size_t> order, std::span<const std::uint64_t> bytes,
                       std::size_t workers, std::uint64_t limit,
                       const std::function<void(std::size_t k, std::size_t worker)>& job);

}  // namespace attend::tools
