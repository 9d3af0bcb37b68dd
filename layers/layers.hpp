#pragma once
// Everything in layers/: Module, Linear, Embedding, Dropout, saving;
// attention/ (additive and dot) and lstm/ (cell, sequence, layers).
// attention/detail/ and lstm/detail/ hold their shared loops: not API, not included here.
#include "layers/attention/attention.hpp"
#include "layers/dropout.hpp"
#include "layers/embedding.hpp"
#include "layers/gradcheck_module.hpp"
#include "layers/linear.hpp"
#include "layers/lstm/lstm.hpp"
#include "layers/lstm/lstm_cell.hpp"
#include "layers/module.hpp"
#include "layers/serialize.hpp"
