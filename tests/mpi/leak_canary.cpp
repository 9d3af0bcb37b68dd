// A deliberate leak under mpirun, for the sanitize build's CTest test
// mpi.leak_check (tests/CMakeLists.txt): it passes only when LeakSanitizer
// reports this leak, and on each rank nothing else, so the MPI tests are known
// to run with leak checks whose suppressions (tests/mpi/lsan.supp) hide Open
// MPI's memory and no more.
#include <cstdlib>
#include <cstring>
#include <span>

#include "models/train/distributed.hpp"

namespace {

// 4096 bytes no pointer refers to once this returns.
[[gnu::noinline]] void leak() {
  void* lost = std::malloc(4096);
  std::memset(lost, 1, 4096);
  asm volatile("" : : "r"(lost) : "memory");  // the allocation happens, and is lost
}

}  // namespace

int main() {
  std::unique_ptr<attend::Communicator> world = attend::connect_world();
  double ranks = 1;
  world->sum(std::span<double>(&ranks, 1));  // a collective, so that MPI's transports are up
  leak();
  world.reset();  // MPI_Finalize
  return ranks >= 2 ? 0 : 2;  // run with mpirun -np 2 or more
}
