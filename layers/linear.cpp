#include "layers/linear.hpp"

#include <cmath>
#include <string>

#include <fmt/format.h>

#include "autograd/grad_mode.hpp"
#include "autograd/ops.hpp"
#include "core/kernels/blas.hpp"

namespace attend::nn {

Linear::Linear(std::int64_t in_features, std::int64_t out_features, bool with_bias, Generator& gen, DType dtype)
    : in_(in_features), out_(out_features) {
  if (in_features <= 0 || out_features <= 0)
    fail("Linear: in_features and out_features must be positive, got {} and {}", in_features, out_features);
  const double bound = 1.0 / std::sqrt(static_cast<double>(in_features));
  weight = uniform({out_features, in_features}, -bound, bound, gen, dtype);
  register_parameter("weight", weight);
  if (with_bias) {
    bias = uniform({out_features}, -bound, bound, gen, dtype);
    register_parameter("bias", bias);
  }
}

Tensor Linear::forward(const Tensor& x) const {
  check_defined("Linear", x);
  return linear(x, weight, bias);
}

PackedLinear PackedLinear::pack(const Tensor& weight, const Tensor& bias) { return pack_with(weight, bias, true); }

PackedLinear PackedLinear::pack_with(const Tensor& weight, const Tensor& bias, bool streamed) {
  if (!weight.defined() || weight.dtype() != Float32 || weight.dim() != 2)
    fail("PackedLinear: the weight must be a float32 matrix (out, in), got {}",
         weight.defined() ? fmt::format("{} {}", weight.dtype(), weight.shape()) : std::string("none"));
  if (bias.defined() && (bias.dtype() != Float32 || bias.dim() != 1 || bias.size(0) != weight.size(0)))
    fail("PackedLinear: the bias must be float32 ({}) for weight {}, got {} {}", weight.size(0), weight.shape(),
         bias.dtype(), bias.shape());
  PackedLinear out;
  auto packed = std::make_shared<blas::PackedMatrix>(weight.data<float>(), weight.size(0), weight.size(1),
                                                     weight.size(1));
  packed->set_streamed(streamed);  // decoding's steps pass more than L2 holds between two products
  out.weight_ = std::move(packed);
  if (bias.defined()) out.bias_ = bias.detach().clone();
  return out;
}

PackedLinear PackedLinear::from_packed(std::shared_ptr<const blas::PackedMatrix> weight, const Tensor& bias) {
  if (weight == nullptr) fail("PackedLinear::from_packed: no weight");
  if (bias.defined() && (bias.dtype() != Float32 || bias.dim() != 1 || bias.size(0) != weight->n()))
    fail("PackedLinear::from_packed: the bias must be float32 ({}) for a weight ({}, {}), got {} {}", weight->n(),
         weight->n(), weight->k(), bias.dtype(), bias.shape());
  PackedLinear out;
  out.weight_ = std::move(weight);
  if (bias.defined()) out.bias_ = bias.detach().clone();
  return out;
}

PackedLinear PackedLinear::for_steps(const Tensor& weight, const Tensor& bias, bool defer_weight_grad) {
  if (!weight.defined()) return {};
  const bool recording = GradMode::enabled();
  PackedLinear out;
  if (weight.dtype() == Float32) {
    // Not streamed when recording, as LSTMCell::step_weights's packs: a training
    // step's products by W find it in L2.
    out = pack_with(weight, bias, !recording);
    if (recording)  // W^T for the backward's dx
      out.weight_t_ = std::make_shared<const blas::PackedMatrix>(
          blas::PackedMatrix::from_transposed(weight.data<float>(), weight.size(1), weight.size(0), weight.size(1)));
  } else {
    if (weight.dim() != 2) fail("PackedLinear: the weight must be a matrix (out, in), got {}", weight.shape());
    if (bias.defined() && (bias.dtype() != weight.dtype() || !(bias.shape() == Shape{weight.size(0)})))
      fail("PackedLinear: the bias must be {} ({}) for weight {}, got {} {}", weight.dtype(), weight.size(0),
           weight.shape(), bias.dtype(), bias.shape());
    out.weight_values_ = weight.detach().clone();  // a copy, as the bias
    if (bias.defined()) out.bias_ = bias.detach().clone();
  }
  if (!recording) return out;
  out.weight_in_ = weight;
  out.bias_in_ = bias;
  if (defer_weight_grad && weight.requires_grad()) {
    out.deferred_ = std::make_shared<DeferredLinearGrads>();
    out.weight_in_ = defer_linear_weight_grad(weight, out.deferred_);
  }
  return out;
}

bool PackedLinear::usable() const { return !empty() && (recorded() || !GradMode::enabled()); }

// forward: y = x @ W^T + b
//   dx (rows, in) += dy (rows, out) @ W (out, in)      float32: by W^T packed once
//   dW (out, in)  += dy^T (out, rows) @ x (rows, in)   deferred to linear_weight_grads
//   db (out)      += sum over rows of dy
Tensor PackedLinear::forward(const Tensor& x) const {
  if (empty()) fail("PackedLinear.forward: nothing packed");
  const bool recording = recorded();
  if (!recording && GradMode::enabled() && x.requires_grad())
    fail("PackedLinear.forward: x requires grad, and no gradient flows through a packed weight (use linear())");
  const DType dt = weight_ ? Float32 : Float64;
  const std::int64_t out = weight_ ? weight_->n() : weight_values_.size(0);
  const std::int64_t in = weight_ ? weight_->k() : weight_values_.size(1);
  if (x.dtype() != dt || x.dim() != 2 || x.size(1) != in)
    fail("PackedLinear.forward: x must be {} (rows, {}), got {} {}", dt, in, x.dtype(), x.shape());
  const std::int64_t rows = x.size(0);
  Tensor y;
  if (dt == Float32) {
    y = attend::empty({rows, out}, dt);
    blas::gemm_packed(rows, x.data<float>(), in, *weight_, 0.0f, y.data<float>(), out,
                      {bias_.defined() ? bias_.data<float>() : nullptr});
  } else {
    NoGradGuard values_only;  // linear()'s forward by the copies; the op below records
    y = linear(x.detach(), weight_values_, bias_);
  }
  if (!recording) return y;
  const bool has_bias = bias_in_.defined();
  auto backward = [x = x.detach(), w = weight_values_, w_t = weight_t_, deferred = deferred_, rows, in, out,
                   has_bias](Grads& g) {
    const Tensor& dy = g.dy();  // (rows, out)
    if (g.needs(0)) {           // dx (rows, in) += dy (rows, out) @ W (out, in)
      if (w_t)
        blas::gemm_packed(rows, dy.data<float>(), out, *w_t, 1.0f, g.dx(0).data<float>(), in);
      else
        blas::gemm(false, false, rows, in, out, 1.0, dy.data<double>(), out, w.data<double>(), in, 1.0,
                   g.dx(0).data<double>(), in);
    }
    if (g.needs(1) && deferred) {
      // dW: this step's rows, multiplied out with every other step's by
      // linear_weight_grads. g.dx touches W's slot, so that the engine runs that
      // op's backward (only ops with a gradient run).
      deferred->dy.push_back(dy);
      deferred->x.push_back(x);
      g.dx(1);
    } else if (g.needs(1)) {  // dW (out, in) += dy^T (out, rows) @ x (rows, in), this step's alone
      dispatch(dy.dtype(), [&](auto zero) {
        using T = decltype(zero);
        blas::gemm(true, false, out, in, rows, T(1), dy.data<T>(), out, x.data<T>(), in, T(1), g.dx(1).data<T>(), in);
      });
    }
    if (has_bias && g.needs(2)) {  // db (out) += sum over rows of dy
      dispatch(dy.dtype(), [&](auto zero) {
        using T = decltype(zero);
        T* db = g.dx(2).data<T>();
        const T* pdy = dy.data<T>();
        for (std::int64_t r = 0; r < rows; ++r)
          for (std::int64_t o = 0; o < out; ++o) db[o] += pdy[r * out + o];
      });
    }
  };
  const Recorded node = has_bias ? record("packed_linear", {x, weight_in_, bias_in_}, {&y}, std::move(backward))
                                 : record("packed_linear", {x, weight_in_}, {&y}, std::move(backward));
  node.replay({"x", "weight", "bias"}, [](const Tensors& in) {  // one step, its dW not deferred
    return Tensors{for_steps(in[1], in.size() > 2 ? in[2] : Tensor(), false).forward(in[0])};
  });
  return y;
}

// forward: W' = W        dW += dW' (the slot the steps touched: zeros)
//   dW (out, in) += DY^T (out, N) @ X (N, in), over the N rows of every step whose backward ran
Tensor defer_linear_weight_grad(const Tensor& weight, const std::shared_ptr<DeferredLinearGrads>& deferred) {
  Tensor w = weight.detach();
  record("linear_weight_grads", {weight}, {&w},
         [d = deferred](Grads& g) {  // shared: the steps and their PackedLinear may be gone by now
           if (!g.needs(0)) return;
           Tensor& dW = g.dx(0);
           dW.add_(g.dy(0));
           if (d->dy.empty()) return;
           NoGradGuard no_grad;
           const Tensor dy = concat(d->dy, 0), x = concat(d->x, 0);  // N rows each
           d->dy.clear();  // a second backward (retain_graph) gathers its own
           d->x.clear();
           const std::int64_t N = dy.size(0), out = dy.size(1), in = x.size(1);
           dispatch(dy.dtype(), [&](auto zero) {
             using T = decltype(zero);
             blas::gemm(true, false, out, in, N, T(1), dy.data<T>(), out, x.data<T>(), in, T(1), dW.data<T>(), in);
           });
         })
      .replay({"weight"}, [](const Tensors& in) {
        return Tensors{defer_linear_weight_grad(in[0], std::make_shared<DeferredLinearGrads>())};
      });
  return w;
}

}  // namespace attend::nn
