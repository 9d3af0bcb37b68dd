#pragma once
// Everything in core/.
#include "core/kernels/blas.hpp"
#include "core/dtype.hpp"
#include "core/error.hpp"
#include "core/random.hpp"
#include "core/shape.hpp"
#include "core/storage.hpp"
#include "core/tensor.hpp"
