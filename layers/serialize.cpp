#include "layers/serialize.hpp"

#include "core/io/safetensors.hpp"

namespace attend::nn {

void save(const Module& module, const std::string& path, const std::map<std::string, std::string>& metadata) {
  save_safetensors(path, module.state_dict(), metadata);
}

void load(Module& module, const std::string& path) {
  SafetensorsFile file = load_safetensors(path);
  if (!file.int8.empty())  // its float tensors alone would load as a model missing its weights
    fail("load: {}: the file holds int8 weights ('{}' is I8): it belongs to an int8 model directory "
         "(attend quantize), which load_model_dir reads", path, file.int8.begin()->first);
  try {
    module.load_state_dict(file.tensors, /*strict=*/true);
  } catch (const Error& e) {
    fail("load: {}: {}", path, e.what());
  }
}

void save(const optim::Optimizer& optimizer, const std::string& path,
          const std::map<std::string, std::string>& metadata) {
  if (metadata.count("optimizer"))
    fail("save: {}: the metadata key 'optimizer' is reserved for the optimizer's type", path);
  std::map<std::string, std::string> all = metadata;
  all["optimizer"] = optimizer.name();
  save_safetensors(path, optimizer.state_dict(), all);
}

void load(optim::Optimizer& optimizer, const std::string& path) {
  SafetensorsFile file = load_safetensors(path);
  auto it = file.metadata.find("optimizer");
  if (it == file.metadata.end())
    fail("load: {}: no 'optimizer' metadata entry: not an optimizer state file", path);
  if (it->second != optimizer.name())
    fail("load: {}: the file holds {} state, but the optimizer is {}", path, it->second, optimizer.name());
  try {
    optimizer.load_state_dict(file.tensors);
  } catch (const Error& e) {
    fail("load: {}: {}", path, e.what());
  }
}

}  // namespace attend::nn
