#pragma once
// Data-parallel training: N processes (ranks) each hold the whole model, take
// their share of every global batch, sum their gradients, and take the same
// optimizer step. The transport is MPI (Open MPI), optional at build time;
// models/train/distributed_mpi.cpp is the only file that includes <mpi.h>.
//
//   std::unique_ptr<Communicator> world = connect_world();  // MPI under mpirun, else one process
//   Seq2Seq model(config, init);
//   broadcast_parameters(*world, model.parameters());       // rank 0's initial weights everywhere
//   optim::Adam adam(model.parameters(), {.lr = 1e-3});
//   GradientSum gradients(*world, model.parameters());
//   for (BatchIterator it(pairs, {.batch_size = 32}, 1, 0); !it.done();) {
//     Shard shard = take_shard(*world, pairs, it.next_ids());  // this rank's part of the global batch
//     adam.zero_grad();
//     double loss = 0;
//     if (!shard.empty()) {
//       Tensor l = model.loss(shard.batch);  // mean over the shard's tokens
//       loss = l.item();
//       l.backward();
//     }
//     loss = gradients.sum(shard.weight(), loss).loss;  // the global batch's mean loss
//     optim::clip_grad_norm(model.parameters(), 5.0);   // every rank holds the sums: the global norm
//     adam.step();                                       // the same step on every rank
//   }
//
// The loss of a global batch is the mean over all its target tokens, so a shard
// with n of the batch's N_tok tokens weighs n / N_tok (not 1 / ranks): the summed
// gradient equals the one-process gradient of the whole batch.
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/tensor.hpp"
#include "models/data/corpus.hpp"
#include "models/data/subword.hpp"

namespace attend {

// The processes of one training job. Every call is collective: every rank makes
// the same calls in the same order (or the job hangs, which the callers avoid by
// making every decision from values all ranks share).
class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  bool is_root() const { return rank() == 0; }

  // Sums over all ranks, in place; every rank gets the same sums.
  virtual void sum(std::span<float> values) = 0;
  virtual void sum(std::span<double> values) = 0;
  // Root's bytes into every other rank's (same length everywhere).
  virtual void broadcast(std::span<std::byte> bytes, int root) = 0;
  // Every rank's `mine` (the same length on every rank), concatenated in rank order.
  virtual std::vector<std::uint64_t> all_gather(std::span<const std::uint64_t> mine) = 0;
  // Ends every process of the job at once, with this exit code: for a failure
  // that the other ranks cannot know of (they may be waiting in a collective call).
  [[noreturn]] virtual void abort(int exit_code) = 0;
};

class SingleProcess final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  void sum(std::span<float>) override {}
  void sum(std::span<double>) override {}
  void broadcast(std::span<std::byte>, int) override {}
  std::vector<std::uint64_t> all_gather(std::span<const std::uint64_t> mine) override {
    return {mine.begin(), mine.end()};
  }
  [[noreturn]] void abort(int exit_code) override;
};

// How many processes the launcher started, from its environment
// (OMPI_COMM_WORLD_SIZE of Open MPI's mpirun, PMI_SIZE of MPICH/Slurm); 1 when
// there is none.
int launched_processes();
int launched_rank();  // OMPI_COMM_WORLD_RANK or PMI_RANK; 0 when there is none
bool built_with_mpi();

// MPI's world when the program was started by mpirun with more than one
// process, else a SingleProcess. Throws attend::Error when started with several
// processes by a build without MPI, or when called twice under MPI. The MPI
// communicator finalises MPI when destroyed.
std::unique_ptr<Communicator> connect_world();

// ---- collective helpers -------------------------------------------------------------

void broadcast_string(Communicator& comm, std::string& text, int root = 0);
// Root's values into every rank's tensors (same shapes and dtypes everywhere).
void broadcast_parameters(Communicator& comm, const std::vector<Tensor>& params, int root = 0);
// Root's whole map (names, shapes, dtypes, values) replaces every other rank's.
void broadcast_tensor_map(Communicator& comm, std::map<std::string, Tensor>& tensors, int root = 0);

// A SubwordTrainer (models/data/subword.hpp) for every rank of comm: rank
// `root` trains the model and sends its bytes to the others, so that every rank
// holds that very model and the others spend no time on it. Collective: every
// rank calls it with the same sentences. When the training fails on the root,
// every rank throws CollectiveError with its message. comm must outlive it.
SubwordTrainer subword_trainer_on_root(Communicator& comm, int root = 0);

// A failure of some ranks that every rank knows of, because they found it
// together: each rank throws the same CollectiveError, so a program can let rank
// 0 report it and the others exit quietly (no MPI abort needed).
class CollectiveError : public Error {
 public:
  using Error::Error;
};
// Every rank passes whether it failed and its message; when any rank failed,
// every rank throws CollectiveError("rank R of N: <R's message>"), R being the
// lowest rank that failed (with one process: the message alone).
void agree_on_failure(Communicator& comm, bool failed, const std::string& message);
// Throws CollectiveError on every rank when the ranks' values differ:
// "rank 2's <what> differs from rank 0's".
void check_same_on_every_rank(Communicator& comm, std::uint64_t value, const std::string& what);

// ---- sharding -----------------------------------------------------------------------

// The examples [begin, end) of a global batch of n that rank r of `ranks` takes:
// contiguous, sizes differing by at most one, the larger shares first.
struct ShardRange {
  std::int64_t begin = 0, end = 0;
};
ShardRange shard_range(std::int64_t n, int rank, int ranks);

// Target tokens of a batch of these examples (each target plus </s>), as
// make_batch counts them; every rank can compute the global batch's this way.
std::int64_t target_tokens(const std::vector<EncodedPair>& data, std::span<const std::int64_t> example_ids);

struct Shard {
  Batch batch;                       // this rank's examples; size 0 when it has none
  std::int64_t tokens = 0;           // this shard's target tokens
  std::int64_t global_tokens = 0;    // the whole global batch's
  bool empty() const { return tokens == 0; }
  double weight() const { return static_cast<double>(tokens) / static_cast<double>(global_tokens); }
};
Shard take_shard(const Communicator& comm, const std::vector<EncodedPair>& data,
                 std::span<const std::int64_t> global_batch, const BatchOptions& options = {});

// ---- gradient sums -----------------------------------------------------------------

// Sums the gradients of `params` over the ranks with one allreduce of one
// flattened buffer, each rank's scaled by its shard's weight. A few numbers ride
// along in the same buffer: the weighted loss, which parameters have a gradient
// anywhere, and flags that every rank must agree on (a failure, a stop request).
struct GradientFlags {
  bool failed = false;    // this rank could not compute its gradients
  bool stop = false;      // this rank was asked to stop (Ctrl-C)
  bool time_up = false;   // this rank's clock says the time budget is spent
};
struct GradientTotals {
  double loss = 0;        // the global batch's mean loss per target token
  int failed_ranks = 0;
  bool stop = false, time_up = false;  // any rank's
};
class GradientSum {
 public:
  GradientSum(Communicator& comm, std::vector<Tensor> params);  // one dtype for all
  // Reads each parameter's grad (undefined counts as zero), sends weight * grad,
  // and writes the sums back: a parameter without a gradient on any rank keeps
  // an undefined grad, as in one process. A failed rank sends zeros.
  GradientTotals sum(double weight, double local_loss, GradientFlags flags = {});

 private:
  Communicator& comm_;
  std::vector<Tensor> params_;
  DType dtype_;
  std::int64_t numel_ = 0;
  std::vector<float> buffer32_;
  std::vector<double> buffer64_;
};

}  // namespace attend
