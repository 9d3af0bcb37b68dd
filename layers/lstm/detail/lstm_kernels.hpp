#pragma once
// The gate math of one LSTM step for one batch row, forward and backward. The
// fused cell (lstm_cell.cpp) and the fused sequence (lstm_sequence.cpp) both
// call these once per row, after the GEMMs that produce the pre-activations.
//
// A row of gates is 4H wide, in PyTorch's order: [i | f | g | o], each H wide.
//
//   i = σ(a_i)  f = σ(a_f)  g = tanh(a_g)  o = σ(a_o)     (a = x W_ih^T + h_prev W_hh^T + b)
//   c = f * c_prev + i * g
//   h = o * tanh(c)
//
// float rows use the vectorisable exp/tanh of core/kernels/detail/fast_math.hpp (exp within 1 ulp,
// tanh within 1.5 ulp, as stated and tested there); double rows use std::exp and
// std::tanh.
//
// No two of the arrays passed may overlap.
#include <cstdint>

namespace attend::nn::lstm_kernels {

// a: on entry the pre-activations without bias (4H), on exit the activations
//    i, f, g, o, which the backward reads;
// bias: b_ih + b_hh (4H); c_prev (H) -> c, tanh_c, h (H each);
// y: a second place for h (the sequence's output row), or null.
template <class T>
void forward_row(std::int64_t hidden, T* a, const T* bias, const T* c_prev, T* c, T* tanh_c, T* h, T* y = nullptr);

// a: the activations the forward left; c_prev and tanh_c as in the forward;
// dh: the gradient of h (H), and dy, or null: more of it (the sequence's output
//     y = h, whose gradient adds to that of the next step's h_prev, dh);
// dc: on entry the gradient of c, on exit that of c_prev (H);
// da: receives the gradient of the pre-activations (4H; assigned, it is scratch);
// db: += da (4H; the bias gradient), or null.
template <class T>
void backward_row(std::int64_t hidden, const T* a, const T* c_prev, const T* tanh_c, const T* dh, const T* dy, T* dc,
                  T* da, T* db = nullptr);

}  // namespace attend::nn::lstm_kernels
