#pragma once
// attend quantize IN_DIR OUT_DIR: an int8 model directory made from a float32
// one (models/quantize/quantize.hpp says what is int8 and how it is stored).
#include <cstdint>
#include <string>

namespace attend {

struct QuantizeReport {
  std::int64_t matrices = 0;    // weight matrices made int8
  std::int64_t quantized = 0;   // their elements
  std::int64_t kept = 0;        // elements kept in float32 (embeddings, biases, v)
  std::uint64_t bytes_in = 0, bytes_out = 0;  // the weights files' sizes
  bool replaced = false;        // an existing OUT_DIR was replaced (overwrite)
};

// Reads the float32 model in `in` (load_model_dir: whole and finite), quantizes
// it and writes `out` as a model directory: config.json (the input's, with
// "weights": "int8" and "quantized_from"), the vocabularies, any SentencePiece
// models, and model.safetensors. Staged and moved in place once it loads
// (StagedModelDir): an existing non-empty `out` is refused unless overwrite.
// Error when `in` is int8 already, or is `out` itself.
QuantizeReport quantize_model_dir(const std::string& in, const std::string& out, bool overwrite);

}  // namespace attend
