#pragma once
// Everything in layers/.
#include "layers/attention/attention.hpp"
#include "layers/dropout.hpp"
#include "layers/embedding.hpp"
#include "layers/gradcheck_module.hpp"
#include "layers/linear.hpp"
#include "layers/lstm/lstm.hpp"
#include "layers/module.hpp"
#include "layers/serialize.hpp"
