#pragma once
// Saving and loading modules and optimizer states as safetensors files.
//
//   attend::nn::save(model, "model.safetensors", {{"epoch", "12"}});
//   attend::nn::load(model, "model.safetensors");      // strict: names and shapes must match
//   attend::nn::save(opt, "optimizer.safetensors");
//   attend::nn::load(opt, "optimizer.safetensors");
//
// A module file holds Module::state_dict() (dotted parameter names, the
// parameters' own dtypes), an optimizer file Optimizer::state_dict() (layout in
// autograd/optim/optim.hpp) plus the metadata entry "optimizer" = "SGD", "Adam", ...
// Values are stored exactly: save then load gives back the same bits.
#include <map>
#include <string>

#include "autograd/optim/optim.hpp"
#include "layers/module.hpp"

namespace attend::nn {

void save(const Module& module, const std::string& path, const std::map<std::string, std::string>& metadata = {});
// Every name and shape must match; the error lists every missing, unexpected and
// misshaped name (Module::load_state_dict), after the file's path. Other dtypes
// are converted to the parameters' own.
void load(Module& module, const std::string& path);

// The metadata key "optimizer" is reserved (it names the optimizer's type).
void save(const optim::Optimizer& optimizer, const std::string& path,
          const std::map<std::string, std::string>& metadata = {});
// The file must hold the state of the same kind of optimizer, for as many parameters.
void load(optim::Optimizer& optimizer, const std::string& path);

}  // namespace attend::nn
