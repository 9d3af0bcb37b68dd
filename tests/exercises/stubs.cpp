// Your answers to the exercises of exercises.hpp (docs/exercises.md): replace
// each "write me" with the backward, adding into the gradients given (dx += ...).
// Then:
//   cmake --build --preset release --target exercises
// A failed exercise shows a hint; each further failure shows the next one.
#include "tests/exercises/exercises.hpp"

namespace attend::exercises {

// 1. y = a op b   da += dy * ∂y/∂a,  db += dy * ∂y/∂b
void scalar_backward([[maybe_unused]] Op op, [[maybe_unused]] double a, [[maybe_unused]] double b,
                     [[maybe_unused]] double y, [[maybe_unused]] double dy, [[maybe_unused]] double& da,
                     [[maybe_unused]] double& db) {
  // write me
}

// 2a. every node root depends on, each after the nodes it reads
std::vector<int> topological_order([[maybe_unused]] const std::vector<Scalar>& graph, [[maybe_unused]] int root) {
  return {};  // write me
}

// 2b. every node's grad += ∂L/∂node, L = graph[root].value
void backward([[maybe_unused]] std::vector<Scalar>& graph, [[maybe_unused]] int root) {
  // write me
}

// 3. y = softmax(x)   dx += ?
void softmax_backward([[maybe_unused]] const Tensor& y, [[maybe_unused]] const Tensor& dy,
                      [[maybe_unused]] Tensor& dx) {
  // write me
}

// 4. L = mean_n −log p_n[t_n]   dz += ?
void cross_entropy_backward([[maybe_unused]] const Tensor& p, [[maybe_unused]] const Tensor& onehot,
                            [[maybe_unused]] const Tensor& dL, [[maybe_unused]] Tensor& dz) {
  // write me
}

// 5. t_j = tanh(k_j + q), e_j = v · t_j   dq, dk, dv += ?
void additive_score_backward([[maybe_unused]] const Tensor& t, [[maybe_unused]] const Tensor& v,
                             [[maybe_unused]] const Tensor& de, [[maybe_unused]] Tensor& dq,
                             [[maybe_unused]] Tensor& dk, [[maybe_unused]] Tensor& dv) {
  // write me
}

// 6. k_j = W_k h_j, t_j = tanh(k_j + q), e_j = v · t_j, α = masked_softmax(e), c = Σ_j α_j h_j
//    dh, dW_k, dv, dq += ?
void additive_attention_backward([[maybe_unused]] const Tensor& h, [[maybe_unused]] const Tensor& W_k,
                                 [[maybe_unused]] const Tensor& v, [[maybe_unused]] const Tensor& t,
                                 [[maybe_unused]] const Tensor& alpha, [[maybe_unused]] const Tensor& mask,
                                 [[maybe_unused]] const Tensor& dc, [[maybe_unused]] Tensor& dh,
                                 [[maybe_unused]] Tensor& dW_k, [[maybe_unused]] Tensor& dv,
                                 [[maybe_unused]] Tensor& dq) {
  // write me
}

// 7. e_j = λ k_j · q, α = masked_softmax(e, mask), c = Σ_j α_j h_j   dq, dk, dh += ?
void dot_attention_backward([[maybe_unused]] const Tensor& q, [[maybe_unused]] const Tensor& k,
                            [[maybe_unused]] const Tensor& h, [[maybe_unused]] const Tensor& alpha,
                            [[maybe_unused]] const Tensor& mask, [[maybe_unused]] double lambda,
                            [[maybe_unused]] const Tensor& dc, [[maybe_unused]] Tensor& dq,
                            [[maybe_unused]] Tensor& dk, [[maybe_unused]] Tensor& dh) {
  // write me
}

// 8. the LSTM cell   every slot of grads += ?
void lstm_cell_backward([[maybe_unused]] const LSTMSaved& s, [[maybe_unused]] const Tensor& dh,
                        [[maybe_unused]] const Tensor& dc, [[maybe_unused]] const LSTMGrads& grads) {
  // write me
}

// 9. α = masked_softmax(e), c = Σ_j α_j h_j, in loops   de, dh += ?
void softmax_context_backward([[maybe_unused]] const Tensor& alpha, [[maybe_unused]] const Tensor& h,
                              [[maybe_unused]] const Tensor& dc, [[maybe_unused]] Tensor& de,
                              [[maybe_unused]] Tensor& dh) {
  // write me
}

}  // namespace attend::exercises
