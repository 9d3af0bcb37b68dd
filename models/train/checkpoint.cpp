#include "models/train/checkpoint.hpp"

#include <climits>
#include <cmath>
#include <filesystem>

#include "core/error.hpp"
#include "core/io/file_io.hpp"
#include "core/io/safetensors.hpp"
#include "layers/serialize.hpp"

namespace attend {

namespace fs = std::filesystem;

std::string checkpoint_dir(const std::string& model_dir) { return (fs::path(model_dir) / "checkpoint").string(); }

bool has_checkpoint(const std::string& model_dir) {
  return fs::exists(fs::path(checkpoint_dir(model_dir)) / "trainer_state.json");
}

void require_checkpoint(const std::string& model_dir) {
  if (has_checkpoint(model_dir)) return;
  if (!fs::is_directory(model_dir))
    fail("resume: {}: no such directory: nothing to resume (a run stopped before its first checkpoint leaves no "
         "directory; start it again without --resume)",
         model_dir);
  if (fs::exists(fs::path(model_dir) / "trainer_state.json"))
    fail("resume: {} holds a checkpoint in the layout of an older attend (trainer_state.json beside the model); "
         "it cannot be resumed safely: train again",
         model_dir);
  fail("resume: {} has no checkpoint to resume ({} is missing)", model_dir,
       (fs::path(checkpoint_dir(model_dir)) / "trainer_state.json").string());
}

namespace {
// Removes a directory that never became (or no longer is) the checkpoint.
struct ScratchDir {
  std::string path;
  bool keep = false;
  ~ScratchDir() {
    std::error_code ec;
    if (!keep) fs::remove_all(path, ec);
  }
};

std::string step_in_file(const std::string& path) {
  SafetensorsFile file = load_safetensors(path);
  auto it = file.metadata.find("global_step");
  if (it == file.metadata.end()) fail("resume: {}: no 'global_step' metadata entry: not written as part of a checkpoint", path);
  return it->second;
}
}  // namespace

void write_checkpoint(const std::string& model_dir, const nn::Module& model, const optim::Optimizer& optimizer,
                      const nlohmann::json& state) {
  const std::string step = std::to_string(state.at("global_step").get<std::int64_t>());
  const std::string final_dir = checkpoint_dir(model_dir);
  fs::create_directories(model_dir);
  ScratchDir scratch{temp_path_for(final_dir)};
  fs::create_directory(scratch.path);
  const auto in_scratch = [&](const char* name) { return (fs::path(scratch.path) / name).string(); };
  nn::save(model, in_scratch("last.safetensors"), {{"global_step", step}});
  nn::save(optimizer, in_scratch("optimizer.safetensors"), {{"global_step", step}});
  write_file_atomic(in_scratch("trainer_state.json"), state.dump(2) + "\n");
  sync_path(scratch.path);
  if (fs::exists(final_dir)) {
    exchange_paths(scratch.path, final_dir);  // the commit point; scratch now holds the old generation
  } else {
    rename_path(scratch.path, final_dir);  // the commit point of the first checkpoint
    scratch.keep = true;
  }
}

nlohmann::json read_checkpoint(const std::string& model_dir, nn::Module& model, optim::Optimizer& optimizer) {
  const std::string dir = checkpoint_dir(model_dir);
  const std::string state_path = (fs::path(dir) / "trainer_state.json").string();
  require_checkpoint(model_dir);
  nlohmann::json state;
  try {
    state = nlohmann::json::parse(read_file(state_path));
  } catch (const nlohmann::json::exception& e) {
    fail("resume: {}: {}", state_path, e.what());
  }
  if (!state.is_object()) fail("resume: {}: not a JSON object", state_path);
  const std::string step = std::to_string(state_count(state, "global_step", state_path));
  for (const char* name : {"last.safetensors", "optimizer.safetensors"}) {
    const std::string path = (fs::path(dir) / name).string();
    const std::string found = step_in_file(path);
    if (found != step)
      fail("resume: {} is from step {} but {} is from step {}: the checkpoint's files do not belong together", path,
           found, state_path, step);
  }
  nn::load(model, (fs::path(dir) / "last.safetensors").string());
  nn::load(optimizer, (fs::path(dir) / "optimizer.safetensors").string());
  return state;
}

}  // namespace attend

namespace attend {

std::string first_non_finite_parameter(const nn::Module& model) {
  for (const auto& named : model.named_parameters()) {
    const Tensor& t = named.second;  // not a structured binding: clang 14 (the fuzz preset) cannot capture one
    const bool finite = dispatch(t.dtype(), [&](auto zero) {
      using T = decltype(zero);
      const T* p = t.data<T>();
      for (std::int64_t i = 0, n = t.numel(); i < n; ++i)
        if (!std::isfinite(p[i])) return false;
      return true;
    });
    if (!finite) return named.first;
  }
  return "";
}

std::int64_t state_count(const nlohmann::json& state, const char* key, const std::string& path) {
  if (!state.contains(key)) fail("resume: {}: '{}' is missing", path, key);
  const nlohmann::json& v = state[key];
  if (!v.is_number_integer()) fail("resume: {}: '{}' must be a whole number, got {}", path, key, v.dump());
  if (v.is_number_unsigned() ? v.get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX) : v.get<std::int64_t>() < 0)
    fail("resume: {}: '{}' must be a count (0 or more, below 2^63), got {}", path, key, v.dump());
  return v.get<std::int64_t>();
}

double state_number(const nlohmann::json& state, const char* key, const std::string& path) {
  if (!state.contains(key)) fail("resume: {}: '{}' is missing", path, key);
  const nlohmann::json& v = state[key];
  if (v.is_null()) return NAN;  // nlohmann writes NaN as null
  if (!v.is_number()) fail("resume: {}: '{}' must be a number, got {}", path, key, v.dump());
  return v.get<double>();
}

std::array<std::uint64_t, 4> state_generator(const nlohmann::json& state, const char* key, const std::string& path) {
  if (!state.contains(key)) fail("resume: {}: '{}' is missing", path, key);
  const nlohmann::json& v = state[key];
  std::array<std::uint64_t, 4> s{};
  if (!v.is_array() || v.size() != 4) fail("resume: {}: '{}' must be an array of 4 unsigned integers", path, key);
  for (std::size_t i = 0; i < 4; ++i) {
    if (!v[i].is_number_unsigned() && !(v[i].is_number_integer() && v[i].get<std::int64_t>() >= 0))
      fail("resume: {}: '{}' must be an array of 4 unsigned integers, got {}", path, key, v.dump());
    s[i] = v[i].get<std::uint64_t>();
  }
  // xoshiro256's one forbidden state: it would produce zeros forever.
  if (s[0] == 0 && s[1] == 0 && s[2] == 0 && s[3] == 0)
    fail("resume: {}: '{}' is all zeros, which is not a valid random generator state", path, key);
  return s;
}

}  // namespace attend
