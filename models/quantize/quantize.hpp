#pragma once
// int8 models: a Seq2Seq whose weight matrices are int8 with a float32 scale per
// row, and whose decoding quantizes the activations row by row at each product
// (core/kernels/int8_gemm.hpp says how, and how far from float32 a product may be).
//
//   attend quantize IN_DIR OUT_DIR        (tools/cli/cmd_quantize.cpp)
//
// Quantized: every matrix that multiplies activations, the encoder's and the
// decoder cell's LSTM weights, the bridges, the attention's projections, W_c and
// the output projection W_out. Not quantized: the embeddings (a lookup, no
// product), the biases and the additive attention's v (a vector).
//
// In memory the model keeps both: each quantized parameter holds its dequantized
// value scale_n * q[n, k] (float32), so that anything that reads parameters (the
// composed oracles, explain, a loss) sees the int8 model's own weights; and the
// int8 values, packed for the decoder's products (Int8Weights). Decoding (no
// gradient recorded) multiplies in int8: the encoder LSTM (input and recurrent
// products), the attention's keys (once per batch) and query projection, the
// decoder cell, W_c and W_out. Only the bridges (two small products per batch)
// run in float32, on the dequantized weights.
//
// On disk (model.safetensors of an int8 model directory, config.json "weights": "int8"):
//   NAME         I8  (n, k)   q, in [-127, 127]
//   NAME.scale   F32 (n)      the row scales, finite and >= 0
// for each quantized NAME, and every other parameter as F32 under its own name.
// NumPy reads it as dequantized = NAME * NAME.scale[:, None].
#include <map>
#include <memory>
#include <string>

#include "core/kernels/int8_gemm.hpp"
#include "models/seq2seq.hpp"

namespace attend {

struct Int8Weights {
  std::map<std::string, blas::QuantizedRows> rows;                          // by parameter name
  std::map<std::string, std::shared_ptr<const blas::PackedMatrix>> packed;  // the same, packed for gemm_packed
  // The packed matrix of parameter `name`; Error when it is not quantized.
  const std::shared_ptr<const blas::PackedMatrix>& at(const std::string& name) const;
};

// Whether parameter `name` of a Seq2Seq is kept in int8 (the list above).
bool is_quantized_parameter(const std::string& name, const Tensor& value);

// Quantizes a float32 model in place (the parameters become their dequantized
// values). Error when it is float64, already int8, or holds a non-finite weight.
void quantize(Seq2Seq& model);

// An int8 model's weights file (the layout above), written atomically; Error
// when the model is not int8.
void save_int8(const Seq2Seq& model, const std::string& path, const std::map<std::string, std::string>& metadata = {});
// Reads it into a float32 model of the same configuration, which becomes int8.
// Strict: every parameter, no other name, each I8 array with its scale of the
// right shape; values of -128, scales negative or not finite are refused, naming
// the file and the parameter.
void load_int8(Seq2Seq& model, const std::string& path);

}  // namespace attend
