#pragma once
// The catalogue of gradient-check cases behind `attend gradcheck`: every op,
// several cases each. Each family of ops contributes its cases through an
// add_*_cases function in one of tools/gradcheck/cases_*.cpp; op_cases() gathers them.
#include <functional>
#include <string>
#include <vector>

#include "autograd/gradcheck/gradcheck.hpp"

namespace attend::tools {

struct OpCase {
  std::string op;    // "matmul"
  std::string name;  // "batched (2, 3, 4) @ (2, 4, 5)"
  std::function<GradcheckReport()> run;
};

std::vector<OpCase> op_cases();

// One per family, in tools/gradcheck/cases_*.cpp as each declaration says.
void add_elementwise_cases(std::vector<OpCase>& cases);
void add_matmul_cases(std::vector<OpCase>& cases);
void add_softmax_cases(std::vector<OpCase>& cases);  // cases_softmax.cpp
void add_loss_cases(std::vector<OpCase>& cases);     // cases_softmax.cpp: cross_entropy, dropout
void add_shape_cases(std::vector<OpCase>& cases);      // cases_shape.cpp: transpose ... index_select
void add_reduction_cases(std::vector<OpCase>& cases);  // cases_shape.cpp: sum, mean
// cases_layers.cpp: linear_cross_entropy, embedding, lstm_cell, lstm_sequence, the attention steps, tap
void add_layer_cases(std::vector<OpCase>& cases);

// The distinct op names of the catalogue, in its order.
std::vector<std::string> op_names();

}  // namespace attend::tools
