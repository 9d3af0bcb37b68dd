// One LSTM step as one fused op (forward, then the backward that undoes it),
// the same step from primitive ops (the oracle), and the LSTMCell module.
//
// Learning? Read lstm_cell_composed in layers/lstm/lstm_cell.cpp first: the same
// step from primitive ops (linear, slice, sigmoid, tanh, mul, add), whose
// backward autograd derives; `attend explain --lstm` prints every gradient of
// it. The fused backward spans three files:
//   lstm_cell.cpp       the one-step op: the GEMMs, then the gate rows (backward: lstm_cell_backward)
//   lstm_sequence.cpp   the whole-sequence op: the same gate rows, the GEMMs batched over time
//   lstm_kernels.cpp    the gate math of one row, forward and backward (lstm_kernels.hpp)
#include "layers/lstm/lstm_cell.hpp"

#include <cmath>
#include <cstring>
#include <tuple>
#include <type_traits>
#include <utility>

#include "autograd/grad_mode.hpp"
#include "autograd/ops.hpp"
#include "core/kernels/blas.hpp"
#include "layers/lstm/detail/lstm_kernels.hpp"

namespace attend::nn {

namespace {

void check_dtype(const char* op, const char* what, const Tensor& t, const LSTMWeights& w) {
  if (t.dtype() != w.weight_ih.dtype())
    fail("{}: {} is {} but the weights are {} (convert with .to(dtype))", op, what, t.dtype(), w.weight_ih.dtype());
}

// b = b_ih + b_hh (4H): the gates only ever see the sum.
template <class T>
void sum_biases(const LSTMWeights& w, T* b) {
  const T* b_ih = w.bias_ih.data<T>();
  const T* b_hh = w.bias_hh.data<T>();
  for (std::int64_t k = 0, n = w.bias_ih.numel(); k < n; ++k) b[k] = b_ih[k] + b_hh[k];
}

}  // namespace

LSTMSizes check_lstm_weights(const char* op, const LSTMWeights& w) {
  check_defined(op, w.weight_ih, "weight_ih");
  check_defined(op, w.weight_hh, "weight_hh");
  check_defined(op, w.bias_ih, "bias_ih");
  check_defined(op, w.bias_hh, "bias_hh");
  const Shape& s_hh = w.weight_hh.shape();
  if (s_hh.rank() != 2 || s_hh[1] < 1 || s_hh[0] != 4 * s_hh[1]) fail("{}: weight_hh must be (4H, H), got {}", op, s_hh);
  const std::int64_t H = s_hh[1];
  const Shape& s_ih = w.weight_ih.shape();
  if (s_ih.rank() != 2 || s_ih[0] != 4 * H || s_ih[1] < 1)
    fail("{}: weight_ih must be (4H, I) = ({}, I), got {}", op, 4 * H, s_ih);
  if (!(w.bias_ih.shape() == Shape{4 * H})) fail("{}: bias_ih must be (4H) = ({}), got {}", op, 4 * H, w.bias_ih.shape());
  if (!(w.bias_hh.shape() == Shape{4 * H})) fail("{}: bias_hh must be (4H) = ({}), got {}", op, 4 * H, w.bias_hh.shape());
  const DType dt = w.weight_ih.dtype();
  if (w.weight_hh.dtype() != dt || w.bias_ih.dtype() != dt || w.bias_hh.dtype() != dt)
    fail("{}: the weights must share one dtype, got weight_ih {}, weight_hh {}, bias_ih {}, bias_hh {}", op, dt,
         w.weight_hh.dtype(), w.bias_ih.dtype(), w.bias_hh.dtype());
  return {s_ih[1], H};
}

namespace {

// lstm_cell's sizes, once its arguments are checked, and which copies of the
// weights its products use (LSTMWeights: packed, transposed, or neither).
struct CellSizes {
  std::int64_t B, I, H;
  bool packed, transposed;
};

CellSizes check_lstm_cell(const char* op, const Tensor& x, const LSTMState& state, const LSTMWeights& w) {
  const auto [I, H] = check_lstm_weights(op, w);
  check_defined(op, x, "x");
  check_defined(op, state.h, "state.h");
  check_defined(op, state.c, "state.c");
  if (x.dim() != 2 || x.size(1) != I) fail("{}: x must be (B, I) = (B, {}), got {}", op, I, x.shape());
  const std::int64_t B = x.size(0);
  if (!(state.h.shape() == Shape{B, H})) fail("{}: state.h must be (B, H) = ({}, {}), got {}", op, B, H, state.h.shape());
  if (!(state.c.shape() == Shape{B, H})) fail("{}: state.c must be (B, H) = ({}, {}), got {}", op, B, H, state.c.shape());
  check_dtype(op, "x", x, w);
  check_dtype(op, "state.h", state.h, w);
  check_dtype(op, "state.c", state.c, w);
  const bool packed = w.packed_ih || w.packed_hh || w.packed_ih_t || w.packed_hh_t;
  if (packed) {
    if (!w.packed_ih || !w.packed_hh) fail("{}: packed_ih and packed_hh come together; only some are set", op);
    if (!w.packed_ih_t != !w.packed_hh_t) fail("{}: packed_ih_t and packed_hh_t come together; only one is set", op);
    if (x.dtype() != Float32) fail("{}: packed weights are float32 only, and the weights are {}", op, x.dtype());
    if (w.packed_ih->n() != 4 * H || w.packed_ih->k() != I || w.packed_hh->n() != 4 * H || w.packed_hh->k() != H)
      fail("{}: packed_ih must hold (4H, I) = ({}, {}) and packed_hh (4H, H) = ({}, {}), got ({}, {}) and ({}, {})", op,
           4 * H, I, 4 * H, H, w.packed_ih->n(), w.packed_ih->k(), w.packed_hh->n(), w.packed_hh->k());
    if (w.packed_ih_t && (w.packed_ih_t->n() != I || w.packed_ih_t->k() != 4 * H || w.packed_hh_t->n() != H ||
                          w.packed_hh_t->k() != 4 * H))
      fail("{}: packed_ih_t must hold (I, 4H) = ({}, {}) and packed_hh_t (H, 4H) = ({}, {}), got ({}, {}) and ({}, {})",
           op, I, 4 * H, H, 4 * H, w.packed_ih_t->n(), w.packed_ih_t->k(), w.packed_hh_t->n(), w.packed_hh_t->k());
  }
  const bool transposed = w.weight_ih_t.defined() || w.weight_hh_t.defined();
  if (transposed) {
    if (!w.weight_ih_t.defined() || !w.weight_hh_t.defined())
      fail("{}: weight_ih_t and weight_hh_t come together; only one is set", op);
    if (!(w.weight_ih_t.shape() == Shape{I, 4 * H}) || !(w.weight_hh_t.shape() == Shape{H, 4 * H}))
      fail("{}: weight_ih_t must be (I, 4H) = ({}, {}) and weight_hh_t (H, 4H) = ({}, {}), got {} and {}", op, I,
           4 * H, H, 4 * H, w.weight_ih_t.shape(), w.weight_hh_t.shape());
    check_dtype(op, "weight_ih_t", w.weight_ih_t, w);
    check_dtype(op, "weight_hh_t", w.weight_hh_t, w);
  }
  return {B, I, H, packed, transposed};
}

// a (B, 4H) = x @ W_ih^T + h_prev @ W_hh^T: all four gates in one GEMM per input,
// by OpenBLAS, on the weights' transposed copies or the weights themselves.
template <class T>
void blas_gate_products(const CellSizes& n, const T* x, const T* h_prev, const LSTMWeights& w, T* a) {
  const std::int64_t B = n.B, I = n.I, H = n.H;
  if (n.transposed) {
    blas::gemm(false, false, B, 4 * H, I, T(1), x, I, w.weight_ih_t.data<T>(), 4 * H, T(0), a, 4 * H);
    blas::gemm(false, false, B, 4 * H, H, T(1), h_prev, H, w.weight_hh_t.data<T>(), 4 * H, T(1), a, 4 * H);
  } else {
    blas::gemm(false, true, B, 4 * H, I, T(1), x, I, w.weight_ih.data<T>(), I, T(0), a, 4 * H);
    blas::gemm(false, true, B, 4 * H, H, T(1), h_prev, H, w.weight_hh.data<T>(), H, T(1), a, 4 * H);
  }
}

// float32: the same products on the packed kernel when the weights come packed.
void gate_products(const CellSizes& n, const float* x, const float* h_prev, const LSTMWeights& w, float* a) {
  if (!n.packed) return blas_gate_products(n, x, h_prev, w, a);
  blas::gemm_packed(n.B, x, n.I, *w.packed_ih, 0.0f, a, 4 * n.H);
  blas::gemm_packed(n.B, h_prev, n.H, *w.packed_hh, 1.0f, a, 4 * n.H);
}

// float64: OpenBLAS (packed weights are float32 only, checked).
void gate_products(const CellSizes& n, const double* x, const double* h_prev, const LSTMWeights& w, double* a) {
  blas_gate_products(n, x, h_prev, w, a);
}

// What the backward of one step reads: the inputs and weights as they were,
// the gate activations and tanh(c).
struct CellSaved {
  Tensor x, h_prev, c_prev, w_ih, w_hh;
  std::shared_ptr<const blas::PackedMatrix> packed_ih_t, packed_hh_t;  // float32, for dx and dh_prev
  std::shared_ptr<DeferredWeightGrads> deferred;                       // set: dW_ih and dW_hh come later
  Tensor gates, tanh_c;                                                // (B, 4H), (B, H)
  CellSizes sizes;
};

// dx and dh_prev by OpenBLAS, from the weights themselves.
template <class T>
void blas_input_grads(Grads& g, const CellSaved& s, const T* pda) {
  const std::int64_t B = s.sizes.B, I = s.sizes.I, H = s.sizes.H;
  if (g.needs(0))
    blas::gemm(false, false, B, I, 4 * H, T(1), pda, 4 * H, s.w_ih.data<T>(), I, T(1), g.dx(0).data<T>(), I);
  if (g.needs(1))
    blas::gemm(false, false, B, H, 4 * H, T(1), pda, 4 * H, s.w_hh.data<T>(), H, T(1), g.dx(1).data<T>(), H);
}

// float32: the same products on the packed kernel when the step packed W^T.
void input_grads(Grads& g, const CellSaved& s, const float* pda) {
  if (!s.packed_ih_t) return blas_input_grads(g, s, pda);
  const std::int64_t B = s.sizes.B, I = s.sizes.I, H = s.sizes.H;
  if (g.needs(0)) blas::gemm_packed(B, pda, 4 * H, *s.packed_ih_t, 1.0f, g.dx(0).data<float>(), I);
  if (g.needs(1)) blas::gemm_packed(B, pda, 4 * H, *s.packed_hh_t, 1.0f, g.dx(1).data<float>(), H);
}

void input_grads(Grads& g, const CellSaved& s, const double* pda) { blas_input_grads(g, s, pda); }

template <class T>
void weight_grads(Grads& g, const CellSaved& s, const Tensor& da) {
  const std::int64_t B = s.sizes.B, I = s.sizes.I, H = s.sizes.H;
  const T* pda = da.data<T>();
  if (s.deferred) {
    // dW_ih and dW_hh: this step's rows, multiplied out with every other step's by
    // lstm_weight_grads (below). g.dx touches the gradient slots, so that the
    // engine runs that op's backward (only ops with a gradient run).
    s.deferred->da.push_back(da);
    s.deferred->x.push_back(s.x);
    s.deferred->h_prev.push_back(s.h_prev);
    if (g.needs(3)) g.dx(3);
    if (g.needs(4)) g.dx(4);
  } else {
    if (g.needs(3))  // dW_ih (4H, I) += da^T (4H, B) @ x (B, I)
      blas::gemm(true, false, 4 * H, I, B, T(1), pda, 4 * H, s.x.data<T>(), I, T(1), g.dx(3).data<T>(), I);
    if (g.needs(4))  // dW_hh (4H, H) += da^T (4H, B) @ h_prev (B, H)
      blas::gemm(true, false, 4 * H, H, B, T(1), pda, 4 * H, s.h_prev.data<T>(), H, T(1), g.dx(4).data<T>(), H);
  }
  for (int k : {5, 6}) {  // db_ih += sum over rows of da;  db_hh likewise
    if (!g.needs(k)) continue;
    T* db = g.dx(k).data<T>();
    for (std::int64_t b = 0; b < B; ++b)
      for (std::int64_t j = 0; j < 4 * H; ++j) db[j] += pda[b * 4 * H + j];
  }
}

void lstm_cell_backward(Grads& g, const CellSaved& s);  // right below lstm_cell

}  // namespace

// The fused step. Saved for the backward: x, h_prev, c_prev, the gate
// activations, tanh(c) and the weights.
LSTMState lstm_cell(const Tensor& x, const LSTMState& state, const LSTMWeights& w) {
  const char* op = "lstm_cell";
  const CellSizes sizes = check_lstm_cell(op, x, state, w);
  const std::int64_t B = sizes.B, H = sizes.H;
  const Tensor& h_prev = state.h;
  const Tensor& c_prev = state.c;
  Tensor gates = empty({B, 4 * H}, x.dtype());  // pre-activations, then activations
  Tensor tanh_c = empty({B, H}, x.dtype());
  Tensor h = empty({B, H}, x.dtype());
  Tensor c = empty({B, H}, x.dtype());
  dispatch(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    T* a = gates.data<T>();
    gate_products(sizes, x.data<T>(), h_prev.data<T>(), w, a);
    Tensor bias = empty({4 * H}, x.dtype());
    sum_biases(w, bias.data<T>());
    // i, f, g, o, then c = f * c_prev + i * g and h = o * tanh(c), row by row
    for (std::int64_t b = 0; b < B; ++b)
      lstm_kernels::forward_row(H, a + b * 4 * H, bias.data<T>(), c_prev.data<T>() + b * H, c.data<T>() + b * H,
                                tanh_c.data<T>() + b * H, h.data<T>() + b * H);
  });

  record(op, {x, h_prev, c_prev, w.weight_ih, w.weight_hh, w.bias_ih, w.bias_hh}, {&h, &c},
         [s = CellSaved{x.detach(), h_prev.detach(), c_prev.detach(), w.weight_ih.detach(), w.weight_hh.detach(),
                        w.packed_ih_t, w.packed_hh_t, w.deferred, gates, tanh_c, sizes}](Grads& g) {
           lstm_cell_backward(g, s);
         })
      .replay({"x", "h_prev", "c_prev", "weight_ih", "weight_hh", "bias_ih", "bias_hh"}, [](const Tensors& in) {
           const LSTMState next = lstm_cell(in[0], {in[1], in[2]}, {in[3], in[4], in[5], in[6]});
           return Tensors{next.h, next.c};
         });
  return {h, c};
}

namespace {

// forward: a = x @ W_ih^T + b_ih + h_prev @ W_hh^T + b_hh;  gates and c, h from a
//   da, dc_prev   from dh and dc by the gate math backward (lstm_kernels.cpp)
//   dx (B, I) += da (B, 4H) @ W_ih (4H, I);  dh_prev (B, H) += da (B, 4H) @ W_hh (4H, H)
//   dc_prev += dc * f
//   dW_ih (4H, I) += da^T @ x;   dW_hh (4H, H) += da^T @ h_prev   (or deferred)
//   db_ih += sum over rows of da;   db_hh likewise
void lstm_cell_backward(Grads& g, const CellSaved& s) {
  const std::int64_t B = s.sizes.B, H = s.sizes.H;
  dispatch(s.x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    // The gate math backward, row by row (lstm_kernels.cpp): from dh and dc to
    // da (B, 4H), the gradient of the pre-activations, and dc_prev.
    Tensor da = empty({B, 4 * H}, s.x.dtype());
    Tensor dc = g.dy(1).clone();  // becomes dc_prev = dc * f
    for (std::int64_t b = 0; b < B; ++b)
      lstm_kernels::backward_row<T>(H, s.gates.data<T>() + b * 4 * H, s.c_prev.data<T>() + b * H,
                                    s.tanh_c.data<T>() + b * H, g.dy(0).data<T>() + b * H, nullptr,
                                    dc.data<T>() + b * H, da.data<T>() + b * 4 * H);
    input_grads(g, s, da.data<T>());
    if (g.needs(2)) g.dx(2).add_(dc);  // dc_prev += dc * f
    weight_grads<T>(g, s, da);
  });
}

}  // namespace

// weight_ih and weight_hh as the steps of one sequence see them: the same data
// (detach shares it), produced by one recorded op that every step consumes, so
// that its backward runs after all of theirs (see DeferredWeightGrads).
// forward: W' = W                      dW += dW' (what the steps added directly)
//   dW_ih (4H, I) += DA^T (4H, N) @ X (N, I);  dW_hh (4H, H) += DA^T @ H_prev (N, H)
// with the N rows of every step whose backward ran, gathered in `deferred`.
std::pair<Tensor, Tensor> defer_weight_grads(const Tensor& weight_ih, const Tensor& weight_hh,
                                             const std::shared_ptr<DeferredWeightGrads>& deferred) {
  Tensor w_ih = weight_ih.detach(), w_hh = weight_hh.detach();
  deferred->weight_ih = weight_ih;
  deferred->weight_hh = weight_hh;
  record("lstm_weight_grads", {weight_ih, weight_hh}, {&w_ih, &w_hh},
         [d = deferred](Grads& g) {  // shared: the steps and their LSTMWeights may be gone by now
           if (g.needs(0)) g.dx(0).add_(g.dy(0));
           if (g.needs(1)) g.dx(1).add_(g.dy(1));
           if (d->da.empty()) return;
           NoGradGuard no_grad;
           const Tensor da = concat(d->da, 0), x = concat(d->x, 0), h_prev = concat(d->h_prev, 0);  // N rows each
           d->da.clear();  // a second backward (retain_graph) gathers its own
           d->x.clear();
           d->h_prev.clear();
           const std::int64_t N = da.size(0), G = da.size(1), I = x.size(1), H = h_prev.size(1);
           dispatch(da.dtype(), [&](auto zero) {
             using T = decltype(zero);
             if (g.needs(0))
               blas::gemm(true, false, G, I, N, T(1), da.data<T>(), G, x.data<T>(), I, T(1), g.dx(0).data<T>(), I);
             if (g.needs(1))
               blas::gemm(true, false, G, H, N, T(1), da.data<T>(), G, h_prev.data<T>(), H, T(1),
                          g.dx(1).data<T>(), H);
           });
         })
      .replay({"weight_ih", "weight_hh"}, [](const Tensors& in) {
        const auto [a, b] = defer_weight_grads(in[0], in[1], std::make_shared<DeferredWeightGrads>());
        return Tensors{a, b};
      });
  return {w_ih, w_hh};
}

// The oracle: every line one primitive op, each with its own backward.
LSTMState lstm_cell_composed(const Tensor& x, const LSTMState& state, const LSTMWeights& w) {
  const std::int64_t H = check_lstm_weights("lstm_cell_composed", w).hidden;
  Tensor a = linear(x, w.weight_ih, w.bias_ih) + linear(state.h, w.weight_hh, w.bias_hh);  // (B, 4H)
  Tensor i = sigmoid(slice(a, 1, 0, H));
  Tensor f = sigmoid(slice(a, 1, H, 2 * H));
  Tensor g = tanh(slice(a, 1, 2 * H, 3 * H));
  Tensor o = sigmoid(slice(a, 1, 3 * H, 4 * H));
  Tensor c = f * state.c + i * g;
  Tensor h = o * tanh(c);
  return {h, c};
}

LSTMWeights init_lstm_weights(std::int64_t input_size, std::int64_t hidden_size, Generator& gen,
                              bool forget_bias_one, DType dtype) {
  const std::int64_t I = input_size, H = hidden_size;
  const double k = 1.0 / std::sqrt(static_cast<double>(H));
  LSTMWeights w;
  w.weight_ih = uniform({4 * H, I}, -k, k, gen, dtype);
  w.weight_hh = uniform({4 * H, H}, -k, k, gen, dtype);
  w.bias_ih = uniform({4 * H}, -k, k, gen, dtype);
  w.bias_hh = uniform({4 * H}, -k, k, gen, dtype);
  if (forget_bias_one) {
    for (std::int64_t j = H; j < 2 * H; ++j) {  // the f slice: b_ih + b_hh = 1 + 0
      w.bias_ih.set({j}, 1.0);
      w.bias_hh.set({j}, 0.0);
    }
  }
  return w;
}

LSTMCell::LSTMCell(std::int64_t input_size, std::int64_t hidden_size, Generator& gen, LSTMCellOptions options)
    : input_size_(input_size), hidden_size_(hidden_size) {
  if (input_size <= 0 || hidden_size <= 0)
    fail("LSTMCell: input_size and hidden_size must be positive, got {} and {}", input_size, hidden_size);
  w_ = init_lstm_weights(input_size, hidden_size, gen, options.forget_bias_one, options.dtype);
  register_parameter("weight_ih", w_.weight_ih);
  register_parameter("weight_hh", w_.weight_hh);
  register_parameter("bias_ih", w_.bias_ih);
  register_parameter("bias_hh", w_.bias_hh);
}

LSTMState LSTMCell::initial_state(const Tensor& x, const LSTMState& state) const {
  check_defined("LSTMCell", x, "x");
  if (x.dim() != 2 || x.size(1) != input_size_)
    fail("LSTMCell: x must be (B, I) = (B, {}), got {}", input_size_, x.shape());
  if (state.h.defined() != state.c.defined())
    fail("LSTMCell: give both h and c of the state, or neither (for zeros)");
  if (state.h.defined()) return state;
  const Shape shape{x.size(0), hidden_size_};
  return {zeros(shape, x.dtype()), zeros(shape, x.dtype())};
}

LSTMState LSTMCell::forward(const Tensor& x, const LSTMState& state) const {
  return lstm_cell(x, initial_state(x, state), w_);
}

void set_int8_weights(LSTMWeights& w, std::int64_t I, std::int64_t H, std::shared_ptr<const blas::PackedMatrix> ih,
                      std::shared_ptr<const blas::PackedMatrix> hh) {
  if (!ih != !hh) fail("LSTM int8 weights: W_ih and W_hh come together; only one is given");
  if (ih && (!ih->int8() || !hh->int8())) fail("LSTM int8 weights: the packed weights are float, not int8");
  if (ih && (ih->n() != 4 * H || ih->k() != I || hh->n() != 4 * H || hh->k() != H))
    fail("LSTM int8 weights: W_ih must be (4H, I) = ({}, {}) and W_hh (4H, H) = ({}, {}), got ({}, {}) and ({}, {})",
         4 * H, I, 4 * H, H, ih->n(), ih->k(), hh->n(), hh->k());
  w.int8_ih = std::move(ih);
  w.int8_hh = std::move(hh);
}

void LSTMCell::set_int8(std::shared_ptr<const blas::PackedMatrix> ih, std::shared_ptr<const blas::PackedMatrix> hh) {
  set_int8_weights(w_, w_.weight_ih.size(1), w_.weight_hh.size(1), std::move(ih), std::move(hh));
}

LSTMWeights LSTMCell::step_weights(std::int64_t batch) const {
  LSTMWeights w = w_;
  if (w_.int8_ih && !GradMode::enabled()) {  // decoding an int8 model
    w.packed_ih = w_.int8_ih;
    w.packed_hh = w_.int8_hh;
    return w;
  }
  if (w_.weight_ih.dtype() == Float32) {
    // Without recording (decoding), the step's other weights evict these from
    // L2 between steps: the kernel prefetches them (PackedMatrix::set_streamed).
    const bool streamed = !GradMode::enabled();
    const auto pack = [streamed](const Tensor& W) {  // W (rows, cols)
      auto packed = std::make_shared<blas::PackedMatrix>(W.data<float>(), W.size(0), W.size(1), W.size(1));
      packed->set_streamed(streamed);
      return std::shared_ptr<const blas::PackedMatrix>(std::move(packed));
    };
    const auto pack_transposed = [](const Tensor& W) {  // W^T, for products by W itself
      return std::make_shared<const blas::PackedMatrix>(
          blas::PackedMatrix::from_transposed(W.data<float>(), W.size(1), W.size(0), W.size(1)));
    };
    w.packed_ih = pack(w_.weight_ih);
    w.packed_hh = pack(w_.weight_hh);
    if (GradMode::enabled()) {  // for the backward's products by W; decoding runs none
      w.packed_ih_t = pack_transposed(w_.weight_ih);
      w.packed_hh_t = pack_transposed(w_.weight_hh);
    }
  } else if (batch < kTransposedWeightsBelow) {
    NoGradGuard no_grad;  // copies for speed, outside the graph
    w.weight_ih_t = transpose(w_.weight_ih.detach(), 0, 1);  // a copy: tensors are contiguous
    w.weight_hh_t = transpose(w_.weight_hh.detach(), 0, 1);
  }
  if (GradMode::enabled() && w_.weight_ih.requires_grad() && w_.weight_hh.requires_grad()) {
    w.deferred = std::make_shared<DeferredWeightGrads>();
    std::tie(w.weight_ih, w.weight_hh) = defer_weight_grads(w_.weight_ih, w_.weight_hh, w.deferred);
  }
  return w;
}

LSTMState LSTMCell::forward(const Tensor& x, const LSTMState& state, const LSTMWeights& step_weights) const {
  const bool deferred = step_weights.deferred != nullptr;
  const Tensor& w_ih = deferred ? step_weights.deferred->weight_ih : step_weights.weight_ih;
  const Tensor& w_hh = deferred ? step_weights.deferred->weight_hh : step_weights.weight_hh;
  if (!w_ih.same(w_.weight_ih) || !w_hh.same(w_.weight_hh))
    fail("LSTMCell.forward: the step weights are not this cell's (get them from step_weights())");
  return lstm_cell(x, initial_state(x, state), step_weights);
}

LSTMState LSTMCell::forward_composed(const Tensor& x, const LSTMState& state) const {
  return lstm_cell_composed(x, initial_state(x, state), w_);
}

}  // namespace attend::nn
