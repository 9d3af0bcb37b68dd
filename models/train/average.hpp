#pragma once
// Parameter averaging: several trained copies of one model (the same
// architecture and vocabularies, e.g. runs from different seeds or checkpoints
// of one run copied aside) become one model whose every weight is the mean of
// theirs. Often a little better than any of them, and as cheap to run as one.
//
//   DIR/config.json, source.vocab, target.vocab   copied from the first input
//                                                  (config.json gains "averaged_from")
//   DIR/model.safetensors                          the elementwise mean, in the first input's dtypes
// int8 models (models/quantize/quantize.hpp) average only with int8 models:
// the mean of their dequantized weights, quantized again.
#include <cstdint>
#include <string>
#include <vector>

namespace attend {

struct AverageOptions {
  bool overwrite = false;  // replace an existing, non-empty output directory
  // The file averaged in each input: the best model (model.safetensors), or
  // the last checkpoint of its training run (checkpoint/last.safetensors).
  std::string weights = "model.safetensors";
};

struct AverageReport {
  std::int64_t models = 0, tensors = 0, parameters = 0;
  bool replaced = false;  // an existing directory was replaced (with overwrite)
};

// Averages the inputs' parameters into a new model directory at out, built
// beside it and moved in place once it loads (StagedModelDir). Errors, before
// anything is written: fewer than 2 or more than limits::kMaxAverage inputs;
// an input that is not a loadable model directory; the first architecture
// field (model.*), tokenizer option or vocabulary line that differs from the
// first input's; a tensor missing, unexpected, or of another shape or dtype;
// a mean that is not finite; an existing out without overwrite.
AverageReport average_model_dirs(const std::vector<std::string>& inputs, const std::string& out,
                                 const AverageOptions& options = {});

}  // namespace attend
