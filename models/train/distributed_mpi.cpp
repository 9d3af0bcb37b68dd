// The MPI communicator: the one file that includes <mpi.h>. Without MPI at build
// time (ATTEND_HAVE_MPI unset) it only says so.
#include "models/train/distributed.hpp"

#include "models/train/detail/connect_mpi.hpp"

#if ATTEND_HAVE_MPI
#include <cstdio>
#include <cstdlib>
#include <limits>

#include <mpi.h>

namespace attend {

namespace {

// MPI counts are ints: longer buffers go in pieces.
constexpr std::size_t kMaxCount = std::size_t{1} << 30;

void check(int code, const char* call) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  fail("{}: {}", call, std::string(text, static_cast<std::size_t>(length)));
}

class MpiWorld final : public Communicator {
 public:
  MpiWorld() {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (initialized) fail("connect_world: MPI is already initialised in this process (connect once)");
    check(MPI_Init(nullptr, nullptr), "MPI_Init");
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
  }
  ~MpiWorld() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Finalize();
  }
  MpiWorld(const MpiWorld&) = delete;
  MpiWorld& operator=(const MpiWorld&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }

  void sum(std::span<float> values) override { sum_pieces(values.data(), values.size(), MPI_FLOAT); }
  void sum(std::span<double> values) override { sum_pieces(values.data(), values.size(), MPI_DOUBLE); }

  void broadcast(std::span<std::byte> bytes, int root) override {
    for (std::size_t at = 0; at < bytes.size(); at += kMaxCount) {
      const int count = static_cast<int>(std::min(kMaxCount, bytes.size() - at));
      check(MPI_Bcast(bytes.data() + at, count, MPI_BYTE, root, MPI_COMM_WORLD), "MPI_Bcast");
    }
  }

  std::vector<std::uint64_t> all_gather(std::span<const std::uint64_t> mine) override {
    if (mine.size() > kMaxCount) fail("all_gather: {} values per rank is too many", mine.size());
    std::vector<std::uint64_t> all(mine.size() * static_cast<std::size_t>(size_));
    const int count = static_cast<int>(mine.size());
    check(MPI_Allgather(mine.data(), count, MPI_UINT64_T, all.data(), count, MPI_UINT64_T, MPI_COMM_WORLD),
          "MPI_Allgather");
    return all;
  }

  [[noreturn]] void abort(int exit_code) override {
    std::fflush(stdout);
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, exit_code);
    std::_Exit(exit_code);  // MPI_Abort does not return; this is for the compiler
  }

 private:
  // In place: MPI_IN_PLACE, so the gradients need no second buffer.
  template <class T>
  void sum_pieces(T* values, std::size_t n, MPI_Datatype type) {
    for (std::size_t at = 0; at < n; at += kMaxCount) {
      const int count = static_cast<int>(std::min(kMaxCount, n - at));
      check(MPI_Allreduce(MPI_IN_PLACE, values + at, count, type, MPI_SUM, MPI_COMM_WORLD), "MPI_Allreduce");
    }
  }
  int rank_ = 0, size_ = 1;
};

}  // namespace

bool built_with_mpi() { return true; }

std::unique_ptr<Communicator> detail::connect_mpi() { return std::make_unique<MpiWorld>(); }

}  // namespace attend

#else

namespace attend {

bool built_with_mpi() { return false; }

std::unique_ptr<Communicator> detail::connect_mpi() {
  fail("this attend was built without MPI: install libopenmpi-dev and rebuild");
}

}  // namespace attend

#endif
