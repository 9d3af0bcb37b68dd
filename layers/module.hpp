#pragma once
// Module: the base of everything that owns parameters. A layer registers its
// parameter tensors and its sub-modules by name in its constructor; the base
// then gives dotted names (encoder.lstm.weight_ih_l0), counts, train()/eval()
// and zero_grad() across the whole tree, like torch.nn.Module.
//
// Registration keeps pointers to the members, so a module is neither copied nor
// moved; hold sub-modules as members or in std::unique_ptr.
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/tensor.hpp"

namespace attend::nn {

class Module {
 public:
  Module() = default;
  virtual ~Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // Every parameter of this module and its sub-modules, in registration order.
  std::vector<std::pair<std::string, Tensor>> named_parameters() const;
  std::vector<Tensor> parameters() const;
  std::int64_t num_parameters() const;  // total number of elements

  // Switches dropout and similar behaviour in the whole tree.
  void train(bool on = true);
  void eval() { train(false); }
  bool is_training() const { return training_; }

  void zero_grad();
  // Converts every parameter to dtype (float64 for gradient checks). Parameters
  // become new leaf tensors: collect parameters() again afterwards.
  void to(DType dtype);

  // Parameter values by name (shared with the module, not copies).
  std::map<std::string, Tensor> state_dict() const;
  // Copies values in. With strict, every name must match in both directions;
  // the error lists every missing, unexpected and misshaped name at once.
  void load_state_dict(const std::map<std::string, Tensor>& state, bool strict = true);

 protected:
  // For constructors: the member becomes a leaf that requires grad.
  void register_parameter(std::string name, Tensor& member);
  void register_module(std::string name, Module& child);

 private:
  void collect(const std::string& prefix, std::vector<std::pair<std::string, Tensor*>>& out) const;
  std::vector<std::pair<std::string, Tensor*>> params_;
  std::vector<std::pair<std::string, Module*>> children_;
  bool training_ = true;
};

}  // namespace attend::nn
