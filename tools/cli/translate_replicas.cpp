// translate --workers and serve --copies: copies of the models, loaded at once,
// within half the machine's memory (translate.hpp: load_replicas).
#include <cstdint>

#include "core/io/limits.hpp"
#include "tools/cli/translate.hpp"
#include "tools/cli/work_queue.hpp"

namespace attend::tools {

void check_replica_memory(std::uint64_t bytes, int more, std::uint64_t physical, const char* flag) {
  const double total = static_cast<double>(bytes) * more;
  if (physical != 0 && total > static_cast<double>(physical) / 2)
    fail("{} {} would load {} more copies of the models ({:.1f} MB each, {:.1f} GB in all), "
         "more than half of this machine's memory ({:.1f} GB); ask for fewer",
         flag, more + 1, more, bytes / 1e6, total / 1e9, physical / 1e9);
}

std::vector<std::vector<LoadedModel>> load_replicas(const TranslateFlags& f, std::vector<LoadedModel> first,
                                                    const char* flag) {
  std::uint64_t bytes = 0;  // one copy's parameters
  for (const LoadedModel& m : first)
    for (const Tensor& p : m.model->parameters()) bytes += static_cast<std::uint64_t>(p.numel()) * dtype_size(p.dtype());
  check_replica_memory(bytes, f.workers - 1, limits::physical_memory(), flag);
  std::vector<std::vector<LoadedModel>> replicas(static_cast<std::size_t>(f.workers));
  replicas.front() = std::move(first);
  run_at_once(replicas.size() - 1, [&](std::size_t k, std::size_t) { replicas[k + 1] = load_models(f); });
  return replicas;
}

}  // namespace attend::tools
