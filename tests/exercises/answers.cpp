// Your answers to the exercises of exercises.hpp (docs/exercises.md): replace
// each "write me" with the backward, adding into the gradients given. Then:
//   cmake --build --preset release --target exercises
#include "tests/exercises/exercises.hpp"

namespace attend::exercises {

// 1. y = softmax(x)   dx += ?
void softmax_backward([[maybe_unused]] const Tensor& y, [[maybe_unused]] const Tensor& dy,
                      [[maybe_unused]] Tensor& dx) {
  // write me
}

// 2. y = masked_softmax(x, mask)   dx += ?
void masked_softmax_backward([[maybe_unused]] const Tensor& y, [[maybe_unused]] const Tensor& mask,
                             [[maybe_unused]] const Tensor& dy, [[maybe_unused]] Tensor& dx) {
  // write me
}

// 3. loss = mean_i -log p_i[t_i]   dz += ?
void cross_entropy_backward([[maybe_unused]] const Tensor& p, [[maybe_unused]] const Tensor& onehot,
                            [[maybe_unused]] const Tensor& dloss, [[maybe_unused]] Tensor& dz) {
  // write me
}

// 4. t = tanh(k_j + q), e_j = v . t_j   dq, dk, dv += ?
void additive_score_backward([[maybe_unused]] const Tensor& t, [[maybe_unused]] const Tensor& v,
                             [[maybe_unused]] const Tensor& de, [[maybe_unused]] Tensor& dq,
                             [[maybe_unused]] Tensor& dk, [[maybe_unused]] Tensor& dv) {
  // write me
}

// 5. e_j = scale k_j . q, alpha = masked_softmax(e), c = sum_j alpha_j h_j   dq, dk, dh += ?
void dot_attention_backward([[maybe_unused]] const Tensor& q, [[maybe_unused]] const Tensor& k,
                            [[maybe_unused]] const Tensor& h, [[maybe_unused]] const Tensor& alpha,
                            [[maybe_unused]] double scale, [[maybe_unused]] const Tensor& dc,
                            [[maybe_unused]] Tensor& dq, [[maybe_unused]] Tensor& dk, [[maybe_unused]] Tensor& dh) {
  // write me
}

// 6. the LSTM cell   every gradient in g += ?
void lstm_cell_backward([[maybe_unused]] const LSTMSaved& s, [[maybe_unused]] const Tensor& dh,
                        [[maybe_unused]] const Tensor& dc, [[maybe_unused]] const LSTMGrads& g) {
  // write me
}

}  // namespace attend::exercises
