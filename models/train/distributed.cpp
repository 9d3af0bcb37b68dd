#include "models/train/distributed.hpp"

#include <cstdlib>
#include <cstring>

#include <nlohmann/json.hpp>

#include "models/train/detail/connect_mpi.hpp"

namespace attend {

void SingleProcess::abort(int exit_code) { std::exit(exit_code); }

namespace {
// A number in [0, 2^24) from the environment variable, or -1 when it is unset or not one.
int env_number(const char* name) {
  const char* text = std::getenv(name);
  if (text == nullptr) return -1;
  char* end = nullptr;
  const long n = std::strtol(text, &end, 10);
  return end != text && *end == '\0' && n >= 0 && n < (1L << 24) ? static_cast<int>(n) : -1;
}
}  // namespace

int launched_processes() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"})
    if (int n = env_number(name); n > 0) return n;
  return 1;
}

int launched_rank() {
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMI_RANK"})
    if (int r = env_number(name); r >= 0) return r;
  return 0;
}

std::unique_ptr<Communicator> connect_world() {
  const int n = launched_processes();
  if (n <= 1) return std::make_unique<SingleProcess>();
  if (!built_with_mpi())
    fail("this attend was built without MPI, but mpirun started {} processes of it: install libopenmpi-dev and "
         "rebuild (CMake finds MPI by itself), or run it without mpirun",
         n);
  return detail::connect_mpi();
}

// ---- collective helpers -------------------------------------------------------------

void broadcast_string(Communicator& comm, std::string& text, int root) {
  std::uint64_t length = text.size();
  comm.broadcast(std::as_writable_bytes(std::span(&length, 1)), root);
  text.resize(length);
  comm.broadcast(std::as_writable_bytes(std::span(text.data(), text.size())), root);
}

namespace {
std::span<std::byte> bytes_of(Tensor& t) {
  return {static_cast<std::byte*>(t.raw_data()), static_cast<std::size_t>(t.numel()) * dtype_size(t.dtype())};
}
}  // namespace

void broadcast_parameters(Communicator& comm, const std::vector<Tensor>& params, int root) {
  for (Tensor p : params) comm.broadcast(bytes_of(p), root);
}

void broadcast_tensor_map(Communicator& comm, std::map<std::string, Tensor>& tensors, int root) {
  std::string header;
  if (comm.rank() == root) {
    nlohmann::json j = nlohmann::json::array();
    for (const auto& [name, t] : tensors) {
      std::vector<std::int64_t> dims(t.shape().begin(), t.shape().end());
      j.push_back({name, t.dtype() == Float64 ? "F64" : "F32", dims});
    }
    header = j.dump();
  }
  broadcast_string(comm, header, root);
  if (comm.rank() != root) {
    tensors.clear();
    for (const auto& entry : nlohmann::json::parse(header)) {
      const auto dims = entry.at(2).get<std::vector<std::int64_t>>();
      tensors[entry.at(0).get<std::string>()] =
          zeros(Shape(std::span<const std::int64_t>(dims)), entry.at(1) == "F64" ? Float64 : Float32);
    }
  }
  for (auto& [name, t] : tensors) comm.broadcast(bytes_of(t), root);
}

void agree_on_failure(Communicator& comm, bool failed, const std::string& message) {
  const std::uint64_t mine = failed ? 1 : 0;
  const std::vector<std::uint64_t> all = comm.all_gather(std::span(&mine, 1));
  int first = -1, count = 0;
  for (int r = 0; r < comm.size(); ++r) {
    if (all[static_cast<std::size_t>(r)] == 0) continue;
    if (first < 0) first = r;
    ++count;
  }
  if (first < 0) return;
  std::string text = message;
  broadcast_string(comm, text, first);
  if (comm.size() == 1) throw CollectiveError(text);
  throw CollectiveError(count == 1 ? fmt::format("rank {} of {}: {}", first, comm.size(), text)
                                   : fmt::format("rank {} of {} (and {} more): {}", first, comm.size(), count - 1, text));
}

SubwordTrainer subword_trainer_on_root(Communicator& comm, int root) {
  return [&comm, root](const std::vector<std::string>& sentences, const SubwordTrainOptions& options) {
    std::string bytes, failure;
    if (comm.rank() == root) {
      try {
        bytes = SubwordModel::train(sentences, options).bytes();
      } catch (const Error& e) {
        failure = e.what();
      }
    }
    agree_on_failure(comm, !failure.empty(), failure);
    broadcast_string(comm, bytes, root);
    return SubwordModel::from_bytes(std::move(bytes), fmt::format("the subword model rank {} trained", root));
  };
}

void check_same_on_every_rank(Communicator& comm, std::uint64_t value, const std::string& what) {
  const std::vector<std::uint64_t> all = comm.all_gather(std::span(&value, 1));
  for (int r = 1; r < comm.size(); ++r)
    if (all[static_cast<std::size_t>(r)] != all[0])
      throw CollectiveError(fmt::format("rank {}'s {} differs from rank 0's", r, what));
}

// ---- sharding -----------------------------------------------------------------------

ShardRange shard_range(std::int64_t n, int rank, int ranks) {
  if (ranks < 1 || rank < 0 || rank >= ranks) fail("shard_range: rank {} of {} ranks", rank, ranks);
  if (n < 0) fail("shard_range: {} examples", n);
  const std::int64_t base = n / ranks, extra = n % ranks;  // the first `extra` ranks take one more
  const std::int64_t begin = rank * base + std::min<std::int64_t>(rank, extra);
  return {begin, begin + base + (rank < extra ? 1 : 0)};
}

std::int64_t target_tokens(const std::vector<EncodedPair>& data, std::span<const std::int64_t> example_ids) {
  std::int64_t tokens = 0;
  for (std::int64_t id : example_ids) {
    if (id < 0 || id >= static_cast<std::int64_t>(data.size()))
      fail("target_tokens: example {} is out of range for {} examples", id, data.size());
    tokens += static_cast<std::int64_t>(data[static_cast<std::size_t>(id)].target.size()) + 1;  // + </s>
  }
  return tokens;
}

Shard take_shard(const Communicator& comm, const std::vector<EncodedPair>& data,
                 std::span<const std::int64_t> global_batch, const BatchOptions& options) {
  const ShardRange range = shard_range(static_cast<std::int64_t>(global_batch.size()), comm.rank(), comm.size());
  const auto mine = global_batch.subspan(static_cast<std::size_t>(range.begin),
                                         static_cast<std::size_t>(range.end - range.begin));
  Shard shard;
  shard.global_tokens = target_tokens(data, global_batch);
  if (mine.empty()) return shard;
  shard.batch = make_batch(data, mine, options);
  shard.tokens = shard.batch.target_tokens;
  return shard;
}

// ---- gradient sums -----------------------------------------------------------------

GradientSum::GradientSum(Communicator& comm, std::vector<Tensor> params)
    : comm_(comm), params_(std::move(params)), dtype_(params_.empty() ? Float32 : params_[0].dtype()) {
  for (const Tensor& p : params_) {
    if (p.dtype() != dtype_)
      fail("GradientSum: the parameters must share one dtype, got {} and {}", dtype_name(dtype_), dtype_name(p.dtype()));
    numel_ += p.numel();
  }
}

namespace {
// The buffer: every gradient, flattened in parameter order (numel), then one slot
// per parameter (1 where this rank has its gradient), then the weighted loss and
// the three flags.
template <class T>
GradientTotals sum_buffer(Communicator& comm, const std::vector<Tensor>& params, std::int64_t numel,
                               std::vector<T>& buffer, double weight, double local_loss, GradientFlags flags) {
  const std::size_t P = params.size(), tail = static_cast<std::size_t>(numel) + P;
  buffer.assign(tail + 4, T(0));
  std::size_t offset = 0;
  for (std::size_t i = 0; i < P; ++i) {
    const std::size_t n = static_cast<std::size_t>(params[i].numel());
    const Tensor g = params[i].grad();
    if (!flags.failed && g.defined()) {
      if (g.numel() != params[i].numel() || g.dtype() != params[i].dtype())
        fail("GradientSum: parameter {}'s gradient has {} elements of {}, the parameter {} of {}", i, g.numel(),
             dtype_name(g.dtype()), params[i].numel(), dtype_name(params[i].dtype()));
      const T* src = g.data<T>();
      const T w = static_cast<T>(weight);
      for (std::size_t k = 0; k < n; ++k) buffer[offset + k] = src[k] * w;
      buffer[static_cast<std::size_t>(numel) + i] = T(1);
    }
    offset += n;
  }
  buffer[tail] = flags.failed ? T(0) : static_cast<T>(local_loss * weight);
  buffer[tail + 1] = flags.failed ? T(1) : T(0);
  buffer[tail + 2] = flags.stop ? T(1) : T(0);
  buffer[tail + 3] = flags.time_up ? T(1) : T(0);

  comm.sum(std::span<T>(buffer));

  offset = 0;
  for (std::size_t i = 0; i < P; ++i) {
    const std::size_t n = static_cast<std::size_t>(params[i].numel());
    Tensor p = params[i];
    if (buffer[static_cast<std::size_t>(numel) + i] > T(0)) {
      // A new tensor rather than the old grad's storage, which autograd may share.
      Tensor g = empty(p.shape(), p.dtype());
      std::copy(buffer.begin() + static_cast<std::ptrdiff_t>(offset),
                buffer.begin() + static_cast<std::ptrdiff_t>(offset + n), g.data<T>());
      p.set_grad(g);
    } else {
      p.zero_grad();
    }
    offset += n;
  }
  GradientTotals r;
  r.loss = static_cast<double>(buffer[tail]);
  r.failed_ranks = static_cast<int>(buffer[tail + 1] + T(0.5));
  r.stop = buffer[tail + 2] > T(0);
  r.time_up = buffer[tail + 3] > T(0);
  return r;
}
}  // namespace

GradientTotals GradientSum::sum(double weight, double local_loss, GradientFlags flags) {
  if (dtype_ == Float64) return sum_buffer(comm_, params_, numel_, buffer64_, weight, local_loss, flags);
  return sum_buffer(comm_, params_, numel_, buffer32_, weight, local_loss, flags);
}

}  // namespace attend
