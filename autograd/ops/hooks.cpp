// tap: an identity op that shows the gradient passing through it. This is how
// a learner (or attend translate --explain-grad) sees dL/dalpha, the gradient
// at the attention weights, which is otherwise used inside the backward and
// thrown away.
#include "autograd/ops.hpp"

namespace attend {

// y = x   dx += dy   (and on_grad(dy) is called once per backward)
Tensor tap(const Tensor& x, std::function<void(const Tensor& dy)> on_grad) {
  check_defined("tap", x);
  if (!on_grad) fail("tap: on_grad must be a function");
  Tensor y = x.detach();  // shares the data: the identity costs nothing
  record("tap", {x}, {&y}, [on_grad = std::move(on_grad)](Grads& g) {
    on_grad(g.dy());
    g.dx(0).add_(g.dy());
  }).replay({"x"}, [](const Tensors& in) { return Tensors{tap(in[0], [](const Tensor&) {})}; });
  return y;
}

}  // namespace attend
