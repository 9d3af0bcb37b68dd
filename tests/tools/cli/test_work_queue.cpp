// tools/cli/work_queue: jobs at once on threads, and the queue that translate
// --workers decodes its batches from, within a memory limit.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "tools/cli/work_queue.hpp"

using namespace attend::tools;
using namespace std::chrono_literals;

namespace {

// A flag jobs wait for, with a timeout, so that a schedule that never lets it
// be set fails the test instead of hanging it.
struct Signal {
  std::mutex m;
  std::condition_variable cv;
  int count = 0;
  void add() {
    { std::lock_guard lock(m); ++count; }
    cv.notify_all();
  }
  bool wait_for_count(int n) {
    std::unique_lock lock(m);
    return cv.wait_for(lock, 10s, [&] { return count >= n; });
  }
};

}  // namespace

TEST_CASE("run_at_once runs every job on a worker of its own, at the same time") {
  Signal started;
  std::vector<int> saw_all(3, 0), worker(3, -1);
  run_at_once(3, [&](std::size_t k, std::size_t w) {
    worker[k] = static_cast<int>(w);
    started.add();
    saw_all[k] = started.wait_for_count(3);  // only if all three run at once
  });
  CHECK(saw_all == std::vector<int>{1, 1, 1});
  CHECK(worker == std::vector<int>{0, 1, 2});
  CHECK_THROWS_WITH(run_at_once(2, [](std::size_t k, std::size_t) {
                      if (k == 1) throw std::runtime_error("job 1 failed");
                    }),
                    "job 1 failed");
}

TEST_CASE("run_within_memory runs each job once, in order on one worker") {
  const std::vector<std::size_t> order = {3, 1, 0, 2};
  const std::vector<std::uint64_t> bytes(4, 1);
  std::vector<std::size_t> ran;
  run_within_memory(order, bytes, 1, 100, [&](std::size_t k, std::size_t w) {
    CHECK(w == 0);
    ran.push_back(k);
  });
  CHECK(ran == order);
}

TEST_CASE("a free worker takes the next job without waiting for a slower one") {
  // Job 0 ends only after jobs 1, 2 and 3 have ended: the other worker must take
  // them one after another while job 0 runs (in waves of two it would wait).
  const std::vector<std::size_t> order = {0, 1, 2, 3};
  const std::vector<std::uint64_t> bytes(4, 1);
  Signal others_done;
  std::vector<int> ok(4, 0);
  std::mutex m;
  std::vector<std::size_t> worker_of(4);
  run_within_memory(order, bytes, 2, 100, [&](std::size_t k, std::size_t w) {
    { std::lock_guard lock(m); worker_of[k] = w; }
    if (k == 0) {
      ok[k] = others_done.wait_for_count(3);
    } else {
      ok[k] = 1;
      others_done.add();
    }
  });
  CHECK(ok == std::vector<int>{1, 1, 1, 1});
  CHECK(worker_of[1] == worker_of[2]);
  CHECK(worker_of[2] == worker_of[3]);
  CHECK(worker_of[0] != worker_of[1]);
}

TEST_CASE("jobs run at once only while their bytes fit in the limit together") {
  // Limit 10: jobs of 6 never overlap each other, jobs of 4 may run beside one.
  const std::vector<std::size_t> order = {0, 1, 2, 3, 4, 5};
  const std::vector<std::uint64_t> bytes = {6, 6, 4, 6, 4, 4};
  std::mutex m;
  std::uint64_t in_flight = 0, most = 0;
  run_within_memory(order, bytes, 3, 10, [&](std::size_t k, std::size_t) {
    {
      std::lock_guard lock(m);
      in_flight += bytes[k];
      most = std::max(most, in_flight);
    }
    std::this_thread::sleep_for(5ms);
    std::lock_guard lock(m);
    in_flight -= bytes[k];
  });
  CHECK(most <= 10);
  CHECK(in_flight == 0);
  // A job larger than the limit still runs, alone.
  int ran = 0;
  run_within_memory(order, std::vector<std::uint64_t>(6, 50), 2, 10, [&](std::size_t, std::size_t) {
    std::lock_guard lock(m);
    ++ran;
  });
  CHECK(ran == 6);
}

TEST_CASE("after an error no job starts, and the error is rethrown") {
  const std::vector<std::size_t> order = {0, 1, 2, 3};
  const std::vector<std::uint64_t> bytes(4, 1);
  std::vector<int> ran(4, 0);
  CHECK_THROWS_WITH(run_within_memory(order, bytes, 1, 100,
                                      [&](std::size_t k, std::size_t) {
                                        ran[k] = 1;
                                        if (k == 1) throw std::runtime_error("batch 1 failed");
                                      }),
                    "batch 1 failed");
  CHECK(ran == std::vector<int>{1, 1, 0, 0});
}
