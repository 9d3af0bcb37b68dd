// Jobs on a few threads at once (see work_queue.hpp).
#include "tools/cli/work_queue.hpp"

#include <condition_variable>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

namespace attend::tools {

void run_at_once(std::size_t n, const std::function<void(std::size_t, std::size_t)>& job) {
  std::vector<std::exception_ptr> errors(n);
  const auto run = [&](std::size_t k) {
    try {
      job(k, k);
    } catch (...) {
      errors[k] = std::current_exception();
    }
  };
  std::vector<std::thread> threads;
  for (std::size_t k = 1; k < n; ++k) {
    try {
      threads.emplace_back(run, k);
    } catch (const std::system_error&) {  // no thread to be had: the caller runs it
      run(k);
    }
  }
  if (n > 0) run(0);
  for (std::thread& t : threads) t.join();
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
}

namespace {

// What the workers share: the next job to hand out and the bytes in flight.
struct Queue {
  Queue(std::span<const std::size_t> order, std::span<const std::uint64_t> bytes, std::uint64_t limit)
      : order(order), bytes(bytes), limit(limit) {}
  std::span<const std::size_t> order;
  std::span<const std::uint64_t> bytes;
  std::uint64_t limit;
  std::mutex mutex;
  std::condition_variable freed;
  std::size_t next = 0;
  std::uint64_t in_flight = 0;
  std::size_t running = 0;
  std::exception_ptr error;

  // The next job once it fits beside those running, or false when none is left.
  bool take(std::size_t& k) {
    std::unique_lock lock(mutex);
    freed.wait(lock, [&] {
      return error || next == order.size() || running == 0 || in_flight + bytes[order[next]] <= limit;
    });
    if (error || next == order.size()) return false;
    k = order[next++];
    in_flight += bytes[k];
    ++running;
    return true;
  }

  void finish(std::size_t k, std::exception_ptr e) {
    {
      std::lock_guard lock(mutex);
      in_flight -= bytes[k];
      --running;
      if (e && !error) error = e;
    }
    freed.notify_all();
  }
};

}  // namespace

void run_within_memory(std::span<const std::size_t> order, std::span<const std::uint64_t> bytes,
                       std::size_t workers, std::uint64_t limit,
                       const std::function<void(std::size_t, std::size_t)>& job) {
  Queue queue(order, bytes, limit);
  const auto work = [&](std::size_t worker) {
    for (std::size_t k; queue.take(k);) {
      std::exception_ptr error;
      try {
        job(k, worker);
      } catch (...) {
        error = std::current_exception();
      }
      queue.finish(k, error);
    }
  };
  std::vector<std::thread> threads;
  for (std::size_t w = 1; w < workers; ++w) {
    try {
      threads.emplace_back(work, w);
    } catch (const std::system_error&) {  // no more threads to be had: fewer workers
      break;
    }
  }
  work(0);
  for (std::thread& t : threads) t.join();
  if (queue.error) std::rethrow_exception(queue.error);
}

}  // namespace attend::tools
