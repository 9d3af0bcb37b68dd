#include "layers/module.hpp"

#include <set>

namespace attend::nn {

void Module::register_parameter(std::string name, Tensor& member) {
  check_defined("Module::register_parameter", member, name.c_str());
  for (const auto& [n, p] : params_)
    if (n == name) fail("Module::register_parameter: '{}' is registered twice", name);
  member.requires_grad_(true);
  params_.emplace_back(std::move(name), &member);
}

void Module::register_module(std::string name, Module& child) {
  for (const auto& [n, m] : children_)
    if (n == name) fail("Module::register_module: '{}' is registered twice", name);
  children_.emplace_back(std::move(name), &child);
}

void Module::collect(const std::string& prefix, std::vector<std::pair<std::string, Tensor*>>& out) const {
  for (const auto& [name, p] : params_) out.emplace_back(prefix + name, p);
  for (const auto& [name, child] : children_) child->collect(prefix + name + ".", out);
}

std::vector<std::pair<std::string, Tensor>> Module::named_parameters() const {
  std::vector<std::pair<std::string, Tensor*>> all;
  collect("", all);
  std::vector<std::pair<std::string, Tensor>> out;
  out.reserve(all.size());
  for (auto& [name, p] : all) out.emplace_back(std::move(name), *p);
  return out;
}

std::vector<Tensor> Module::parameters() const {
  std::vector<Tensor> out;
  for (auto& [name, p] : named_parameters()) out.push_back(p);
  return out;
}

std::int64_t Module::num_parameters() const {
  std::int64_t n = 0;
  for (const auto& [name, p] : named_parameters()) n += p.numel();
  return n;
}

void Module::train(bool on) {
  training_ = on;
  for (auto& [name, child] : children_) child->train(on);
}

void Module::zero_grad() {
  for (auto& [name, p] : named_parameters()) p.zero_grad();
}

void Module::to(DType dtype) {
  std::vector<std::pair<std::string, Tensor*>> all;
  collect("", all);
  for (auto& [name, p] : all)
    if (p->dtype() != dtype) *p = p->to(dtype).requires_grad_(true);
}

std::map<std::string, Tensor> Module::state_dict() const {
  std::map<std::string, Tensor> out;
  for (auto& [name, p] : named_parameters()) out.emplace(name, p);
  return out;
}

void Module::load_state_dict(const std::map<std::string, Tensor>& state, bool strict) {
  std::vector<std::pair<std::string, Tensor*>> all;
  collect("", all);
  std::vector<std::string> missing, misshaped, unexpected;
  std::set<std::string> known;
  for (auto& [name, p] : all) {
    known.insert(name);
    auto it = state.find(name);
    if (it == state.end()) missing.push_back(name);
    else if (!(it->second.shape() == p->shape()))
      misshaped.push_back(fmt::format("{} (expected {}, got {})", name, p->shape(), it->second.shape()));
  }
  for (const auto& [name, t] : state)
    if (!known.count(name)) unexpected.push_back(name);
  if (!misshaped.empty() || (strict && (!missing.empty() || !unexpected.empty()))) {
    std::string msg = "load_state_dict: the tensors do not match the module:";
    if (!missing.empty()) msg += fmt::format("\n  missing: {}", fmt::join(missing, ", "));
    if (!unexpected.empty()) msg += fmt::format("\n  unexpected: {}", fmt::join(unexpected, ", "));
    if (!misshaped.empty()) msg += fmt::format("\n  wrong shape: {}", fmt::join(misshaped, ", "));
    throw Error(msg);
  }
  for (auto& [name, p] : all) {
    auto it = state.find(name);
    if (it != state.end()) p->copy_(it->second.to(p->dtype()));
  }
}

}  // namespace attend::nn
