#pragma once
// Everything in autograd/: ops, the graph, gradcheck, to_dot, optimizers and
// learning-rate schedules.
#include "autograd/custom_op.hpp"
#include "autograd/dot.hpp"
#include "autograd/grad_mode.hpp"
#include "autograd/gradcheck/gradcheck.hpp"
#include "autograd/optim/lr_schedule.hpp"
#include "autograd/node.hpp"
#include "autograd/ops.hpp"
#include "autograd/optim/optim.hpp"
