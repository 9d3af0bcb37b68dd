#pragma once
// Everything in autograd/: the recorded graph, backward, custom ops and to_dot;
// ops/ (every differentiable op), gradcheck/ and optim/ (optimizers, schedules).
// ops/detail/ and optim/detail/ hold implementation headers: not API, not included here.
#include "autograd/custom_op.hpp"
#include "autograd/dot.hpp"
#include "autograd/grad_mode.hpp"
#include "autograd/gradcheck/gradcheck.hpp"
#include "autograd/node.hpp"
#include "autograd/ops.hpp"
#include "autograd/optim/lr_schedule.hpp"
#include "autograd/optim/optim.hpp"
