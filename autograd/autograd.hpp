#pragma once
// Everything in autograd/: ops, the graph, gradcheck, to_dot.
#include "autograd/dot.hpp"
#include "autograd/grad_mode.hpp"
#include "autograd/gradcheck.hpp"
#include "autograd/node.hpp"
#include "autograd/ops.hpp"
