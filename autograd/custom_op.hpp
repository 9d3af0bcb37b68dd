#pragma once
// Custom ops: an op of your own with a hand-written backward, written outside
// attend against <attend/attend.hpp>, in the spirit of PyTorch's
// torch.autograd.Function and JAX's custom_vjp. docs/custom-ops.md walks through
// two (a softmax and an additive attention score) and checks them with gradcheck.
//
//   // y = x * tanh(x)   dx += dy * (tanh(x) + x * (1 - tanh(x)^2))
//   const attend::CustomOp x_tanh_x{
//       .name = "x_tanh_x",
//       .input_names = {"x"},
//       .forward = [](attend::OpContext& ctx, const attend::Tensors& in) {
//         attend::Tensor t = attend::tanh(in[0]);   // plain tensors: nothing here is recorded
//         ctx.save({in[0], t});                     // what the backward will need
//         return attend::Tensors{in[0] * t};
//       },
//       .backward = [](const attend::OpContext& ctx, attend::Grads& g) {
//         const attend::Tensor &x = ctx.saved(0), &t = ctx.saved(1);
//         if (g.needs(0)) g.dx(0).add_(g.dy() * (t + x * (1.0 - t * t)));  // add into dx, never assign
//       }};
//   attend::Tensor y = x_tanh_x({x})[0];   // recorded as one node, "x_tanh_x"
//
// The rules are those of attend's own ops (autograd/node.hpp):
// - forward gets the inputs as plain tensors and returns one or more new
//   tensors; grad mode is off inside it, so the tensor ops it calls are not
//   recorded. Inputs that take no gradient (masks) are tensors that do not
//   require grad; non-tensor arguments (indices, sizes) are captured by the
//   lambdas (build the CustomOp where you call it).
// - backward reads g.dy(k), the gradient of output k (its shape), and adds the
//   gradient of input i into g.dx(i) (the input's slot, of its shape, holding
//   whatever has arrived so far: other consumers' contributions, an earlier
//   backward's .grad, gradcheck's random seed) for the inputs with g.needs(i).
//   Add (g.dx(i) += ...), never assign. gradcheck catches an assignment.
// - Anything the backward needs from the forward goes through ctx.save().
#include <functional>
#include <string>
#include <vector>

#include "autograd/node.hpp"

namespace attend {

// What a custom op's forward hands to its backward.
class OpContext {
 public:
  // Keeps tensors for the backward (inputs, outputs or intermediates); they are
  // held cut off from the graph and released once the backward has run.
  void save(const Tensors& tensors);
  const Tensor& saved(std::size_t i) const;
  std::size_t saved_count() const { return saved_.size(); }
  // In forward: whether a backward will want the gradient of this input.
  bool needs_input_grad(std::size_t input) const;

 private:
  friend struct CustomOp;
  std::string op_;
  Tensors saved_;
  std::vector<bool> needs_;
};

// The members have default initializers so that designated initializers may
// leave out the optional ones without -Wmissing-field-initializers.
struct CustomOp {
  std::string name{};                      // the node's name in graphs and reports
  std::vector<std::string> input_names{};  // for gradcheck reports ("dL/dkeys"); optional
  std::function<Tensors(OpContext& ctx, const Tensors& inputs)> forward{};
  std::function<void(const OpContext& ctx, Grads& g)> backward{};

  // Runs forward and, when an input requires grad and grad mode is on, records
  // one node whose backward is `backward`. Returns every output.
  Tensors operator()(const Tensors& inputs) const;
};

}  // namespace attend
