#include "autograd/custom_op.hpp"

#include <memory>

namespace attend {

void OpContext::save(const Tensors& tensors) {
  for (std::size_t k = 0; k < tensors.size(); ++k) {
    if (!tensors[k].defined()) fail("{}: ctx.save: tensor {} is undefined", op_, k);
    saved_.push_back(tensors[k].detach());  // a node holding its own output would be a reference cycle
  }
}

const Tensor& OpContext::saved(std::size_t i) const {
  if (i >= saved_.size())
    fail("{}: ctx.saved({}) but the forward saved {} tensor(s); save them with ctx.save({{...}})", op_, i,
         saved_.size());
  return saved_[i];
}

bool OpContext::needs_input_grad(std::size_t input) const {
  if (input >= needs_.size()) fail("{}: needs_input_grad({}) but the op has {} input(s)", op_, input, needs_.size());
  return needs_[input];
}

namespace {

class CustomNode final : public Node {
 public:
  CustomNode(std::string name, std::function<void(const OpContext&, Grads&)> backward,
             std::shared_ptr<const OpContext> ctx)
      : name_storage_(std::move(name)), backward_(std::move(backward)), ctx_(std::move(ctx)) {}
  const char* stored_name() const { return name_storage_.c_str(); }
  void apply(Grads& grads) override {
    if (!backward_) return;
    NoGradGuard no_grad;  // tensor math in a backward is arithmetic, not part of any graph
    backward_(*ctx_, grads);
  }

 protected:
  void release_saved() override {
    backward_ = nullptr;
    ctx_.reset();
  }

 private:
  std::string name_storage_;
  std::function<void(const OpContext&, Grads&)> backward_;
  std::shared_ptr<const OpContext> ctx_;
};

}  // namespace

Tensors CustomOp::operator()(const Tensors& inputs) const {
  if (name.empty()) fail("custom op: give the op a name (CustomOp::name)");
  if (!forward) fail("custom op '{}': no forward", name);
  if (!backward) fail("custom op '{}': no backward", name);
  if (!input_names.empty() && input_names.size() != inputs.size())
    fail("custom op '{}': {} input name(s) for {} input(s)", name, input_names.size(), inputs.size());
  for (std::size_t i = 0; i < inputs.size(); ++i)
    if (!inputs[i].defined())
      fail("custom op '{}': input {} is undefined", name, i < input_names.size() ? input_names[i] : std::to_string(i));

  auto ctx = std::make_shared<OpContext>();
  ctx->op_ = name;
  const bool recording = should_record(inputs);
  for (const Tensor& x : inputs) ctx->needs_.push_back(recording && x.requires_grad());
  Tensors outputs;
  {
    NoGradGuard no_grad;
    Tensors plain;
    for (const Tensor& x : inputs) plain.push_back(x.detach());
    outputs = forward(*ctx, plain);
  }
  if (outputs.empty()) fail("custom op '{}': forward returned no tensors", name);
  std::vector<Tensor*> out_ptrs;
  for (std::size_t k = 0; k < outputs.size(); ++k) {
    if (!outputs[k].defined()) fail("custom op '{}': forward returned an undefined tensor as output {}", name, k);
    outputs[k] = outputs[k].detach();  // a fresh handle per output, even if forward returned one tensor twice
    out_ptrs.push_back(&outputs[k]);
  }
  if (AnomalyMode::enabled()) check_finite_forward(name.c_str(), out_ptrs);
  if (!recording) return outputs;
  auto node = std::make_shared<CustomNode>(name, backward, ctx);
  Node* raw = node.get();
  record_node(std::move(node), static_cast<CustomNode*>(raw)->stored_name(), inputs, out_ptrs);
  if (ReplayMode::enabled()) raw->set_replay(input_names, [op = *this](const Tensors& in) { return op(in); });
  else raw->set_replay(input_names, nullptr);  // the names alone, for error messages
  return outputs;
}

}  // namespace attend
