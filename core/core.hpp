#pragma once
// Everything in core/: the tensor and its storage, dtypes, errors, random numbers;
// io/ (files, safetensors, input limits) and kernels/ (BLAS, the packed products).
// kernels/detail/ holds the kernels' implementation: not API, not included here.
#include "core/dtype.hpp"
#include "core/error.hpp"
#include "core/io/file_io.hpp"
#include "core/io/limits.hpp"
#include "core/io/printable.hpp"
#include "core/io/safetensors.hpp"
#include "core/kernels/blas.hpp"
#include "core/kernels/int8_gemm.hpp"
#include "core/kernels/packed_gemm.hpp"
#include "core/random.hpp"
#include "core/shape.hpp"
#include "core/small_objects.hpp"
#include "core/storage.hpp"
#include "core/tensor.hpp"
