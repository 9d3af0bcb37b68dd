// core/kernels/blas: products from several threads at once, as attend experiment
// makes them (three models trained side by side), each equal bit for bit to the
// same product made alone, while another thread changes OpenBLAS's thread count.
//
// A stress test, not ThreadSanitizer: the races core/kernels/blas.cpp's lock
// guards against are inside OpenBLAS, which is not built with TSan's
// instrumentation, so TSan cannot see them (it sees only attend's side, the lock
// itself); and a TSan build of the library is a third build of everything, too
// slow for the shared machines this suite runs on. A product that OpenBLAS's
// thread pool mixed up with another caller's, or ran while its size changed,
// comes out wrong or not at all. Debian 12's OpenBLAS (0.3.21, pthreads) passed
// that stress test without the lock too, so it alone cannot fail for want of the
// lock. The lock is therefore checked directly: blas.cpp counts the calls inside
// OpenBLAS at once while it has more than one thread (detail/openblas_calls.hpp),
// and the second test holds the most to 1; without the lock it reaches 2 or 3.
#include <doctest/doctest.h>

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include "core/kernels/blas.hpp"
#include "core/kernels/detail/openblas_calls.hpp"
#include "core/random.hpp"

using namespace attend;

namespace {

// One product, large enough that OpenBLAS on two threads splits it between them
// (over 64^3 multiply-adds, core/kernels/blas.cpp).
template <class T>
struct Product {
  std::int64_t m, n, k;
  std::vector<T> a, b;
  std::vector<T> alone[2];  // made alone, with OpenBLAS on 1 and on 2 threads
  Product(std::int64_t m_, std::int64_t n_, std::int64_t k_, Generator& gen) : m(m_), n(n_), k(k_) {
    for (std::int64_t i = 0; i < m * k; ++i) a.push_back(static_cast<T>(gen.uniform(-1, 1)));
    for (std::int64_t i = 0; i < k * n; ++i) b.push_back(static_cast<T>(gen.uniform(-1, 1)));
    for (int threads : {1, 2}) {
      blas::set_num_threads(threads);
      alone[threads - 1] = run();
    }
  }
  bool right() const {
    const std::vector<T> c = run();
    return c == alone[0] || c == alone[1];
  }
  std::vector<T> run() const {
    std::vector<T> c(static_cast<std::size_t>(m * n));
    blas::gemm(false, false, m, n, k, T(1), a.data(), k, b.data(), n, T(0), c.data(), n);
    return c;
  }
};

// Restores OpenBLAS's thread count and the float32 routing when the test ends.
struct BlasSettings {
  int threads = blas::num_threads();
  bool packed = blas::set_packed_routing(false);  // float32 products on OpenBLAS too
  ~BlasSettings() {
    blas::set_packed_routing(packed);
    blas::set_num_threads(threads);
  }
};

}  // namespace

TEST_CASE("products from three threads at once equal the same products made alone, whatever OpenBLAS's thread count") {
  const BlasSettings settings;
  Generator gen(11);
  std::vector<Product<double>> doubles;
  std::vector<Product<float>> floats;
  for (int i = 0; i < 3; ++i) {
    doubles.emplace_back(96 + 8 * i, 80, 72, gen);
    floats.emplace_back(112, 88 + 8 * i, 64, gen);
  }
  for (const int threads : {1, 2}) {
    CAPTURE(threads);
    blas::set_num_threads(threads);
    std::atomic<int> wrong{0};
    std::atomic<bool> done{false};
    std::vector<std::thread> callers;
    for (int t = 0; t < 3; ++t)
      callers.emplace_back([&, t] {
        for (int round = 0; round < 300; ++round) {
          const auto& d = doubles[static_cast<std::size_t>((t + round) % 3)];
          const auto& f = floats[static_cast<std::size_t>((t + 2 * round) % 3)];
          if (!d.right()) ++wrong;
          if (!f.right()) ++wrong;
        }
      });
    // Meanwhile the count goes back and forth between 2 and `threads`, as a
    // program setting it (attend experiment does) might while others multiply.
    std::thread setter([&] {
      for (int i = 0; !done; ++i) {
        blas::set_num_threads(i % 2 == 0 ? 2 : threads);
        std::this_thread::yield();
      }
    });
    for (auto& c : callers) c.join();
    done = true;
    setter.join();
    CHECK(wrong == 0);
  }
}

TEST_CASE("with OpenBLAS on two threads, products from three threads at once enter it one at a time") {
  const BlasSettings settings;
  Generator gen(12);
  std::vector<Product<double>> doubles;
  std::vector<Product<float>> floats;
  for (int i = 0; i < 3; ++i) {
    doubles.emplace_back(96 + 8 * i, 80, 72, gen);
    floats.emplace_back(112, 88 + 8 * i, 64, gen);
  }
  blas::set_num_threads(2);
  blas::detail::reset_openblas_calls_at_once();
  std::atomic<int> wrong{0};
  std::vector<std::thread> callers;
  for (int t = 0; t < 3; ++t)
    callers.emplace_back([&, t] {
      for (int round = 0; round < 200; ++round) {
        if (!doubles[static_cast<std::size_t>((t + round) % 3)].right()) ++wrong;
        if (!floats[static_cast<std::size_t>((t + 2 * round) % 3)].right()) ++wrong;
      }
    });
  for (auto& c : callers) c.join();
  CHECK(wrong == 0);
  CHECK(blas::detail::most_openblas_calls_at_once() == 1);  // 0 would mean nothing was counted
}
