#pragma once
// Helpers for state_dict / load_state_dict of the optimizers and schedules
// (autograd/optim/optim.cpp, lr_schedule.cpp); not part of the API.
#include <map>
#include <string>
#include <vector>

#include "core/tensor.hpp"

namespace attend::optim {

namespace detail {
Tensor scalar_state(double value);  // rank-0 float64
// Reads the rank-0 entries `names` from state; with no_others, any other key is
// unexpected. Throws "<who>::load_state_dict: the state does not match: ..." listing
// every missing, unexpected and non-scalar entry.
std::map<std::string, double> read_scalars(const std::string& who, const std::map<std::string, Tensor>& state,
                                           const std::vector<std::string>& names);
}  // namespace detail

}  // namespace attend::optim
