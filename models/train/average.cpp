#include "models/train/average.hpp"

#include <cmath>
#include <filesystem>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/io/file_io.hpp"
#include "core/io/limits.hpp"
#include "core/io/printable.hpp"
#include "core/io/safetensors.hpp"
#include "models/model_dir.hpp"
#include "models/quantize/quantize.hpp"

namespace attend {

namespace {

// The first architecture field (the ones that shape the parameters or their
// meaning) or tokenizer option in which `other` differs from `first`, as a message.
std::string config_difference(const LoadedModel& first, const LoadedModel& other) {
  const Seq2SeqConfig &a = first.config, &b = other.config;
  auto differs = [](const char* field, const auto& x, const auto& y) {
    return fmt::format("{} is {}, the first input's is {}", field, y, x);
  };
  if (a.source_vocab != b.source_vocab) return differs("model.source_vocab", a.source_vocab, b.source_vocab);
  if (a.target_vocab != b.target_vocab) return differs("model.target_vocab", a.target_vocab, b.target_vocab);
  if (a.embed != b.embed) return differs("model.embed", a.embed, b.embed);
  if (a.hidden != b.hidden) return differs("model.hidden", a.hidden, b.hidden);
  if (a.layers != b.layers) return differs("model.layers", a.layers, b.layers);
  if (a.bidirectional != b.bidirectional) return differs("model.bidirectional", a.bidirectional, b.bidirectional);
  if (a.attention != b.attention)
    return differs("model.attention", attention_name(a.attention), attention_name(b.attention));
  if (first.tokenizer.lowercase != other.tokenizer.lowercase)
    return differs("tokenizer.lowercase", first.tokenizer.lowercase, other.tokenizer.lowercase);
  if (first.tokenizer.split_elision != other.tokenizer.split_elision)
    return differs("tokenizer.split_elision", first.tokenizer.split_elision, other.tokenizer.split_elision);
  if (first.int8 != other.int8)
    return fmt::format("its weights are {}, the first input's are {} (models average only with others of the same kind)",
                       other.int8 ? "int8" : "float32", first.int8 ? "int8" : "float32");
  return "";
}

// The tensors of one input, checked against the first input's names, shapes and dtypes.
void check_tensors(const std::string& path, const std::map<std::string, Tensor>& first,
                   const std::map<std::string, Tensor>& other) {
  for (const auto& [name, t] : first) {
    auto it = other.find(name);
    if (it == other.end())
      fail("attend average: {}: has no tensor '{}', which the first input has", path, printable(name));
    if (it->second.shape() != t.shape())
      fail("attend average: {}: tensor '{}' is {}, the first input's is {}", path, printable(name), it->second.shape(),
           t.shape());
    if (it->second.dtype() != t.dtype())
      fail("attend average: {}: tensor '{}' is {}, the first input's is {}", path, printable(name), it->second.dtype(),
           t.dtype());
  }
  for (const auto& [name, t] : other)
    if (!first.contains(name))
      fail("attend average: {}: holds tensor '{}', which the first input does not", path, printable(name));
}

// sum += x, elementwise, in double.
void accumulate(std::vector<double>& sum, const Tensor& x) {
  const Tensor x64 = x.to(Float64);
  const double* v = x64.data<double>();
  for (std::size_t i = 0; i < sum.size(); ++i) sum[i] += v[i];
}

// What is averaged of an input: its weights file's tensors; an int8 model's
// parameters, dequantized (their int8 values times their row's scale).
std::map<std::string, Tensor> tensors_to_average(const LoadedModel& m, const std::string& path) {
  if (m.int8) return m.model->state_dict();
  return load_safetensors(path).tensors;
}

// The mean's weights file: an int8 model's mean is quantized anew.
void save_mean(const LoadedModel& first, const std::map<std::string, Tensor>& mean, const std::string& path,
               std::int64_t n) {
  const std::map<std::string, std::string> metadata = {{"averaged_from", std::to_string(n) + " models"}};
  if (!first.int8) return save_safetensors(path, mean, metadata);
  Generator init(0);
  Seq2Seq model(first.config, init);
  model.load_state_dict(mean);
  quantize(model);
  save_int8(model, path, metadata);
}

}  // namespace

AverageReport average_model_dirs(const std::vector<std::string>& inputs, const std::string& out,
                                 const AverageOptions& options) {
  const auto n = static_cast<std::int64_t>(inputs.size());
  if (n < 2) fail("attend average: needs at least two model directories to average, got {}", n);
  if (n > limits::kMaxAverage)
    fail("attend average: {} model directories, at most {} (limits::kMaxAverage, core/io/limits.hpp)", n, limits::kMaxAverage);
  if (options.weights != "model.safetensors" && options.weights != "checkpoint/last.safetensors")
    fail("attend average: weights must be model.safetensors or checkpoint/last.safetensors, got '{}'",
         printable(options.weights));

  // Said before any input is read (StagedModelDir refuses it too, in training's words).
  std::error_code ec;
  const bool out_holds_files = std::filesystem::is_directory(out, ec) && !std::filesystem::is_empty(out, ec);
  if (out_holds_files && !options.overwrite)
    fail("attend average: --out {}: the directory exists; pass --overwrite to replace it, or another --out", out);

  // The first input sets the architecture, the vocabularies and the tensors'
  // names, shapes and dtypes; load_model_dir checks each input whole (config,
  // vocabularies, every parameter present with its shape, all finite).
  const LoadedModel first = load_model_dir(inputs[0], options.weights);
  const std::string first_path = path_in(inputs[0], options.weights);
  const std::map<std::string, Tensor> first_tensors = tensors_to_average(first, first_path);
  std::map<std::string, std::vector<double>> sums;  // name -> sum over the inputs, in double
  for (const auto& [name, t] : first_tensors) {
    sums[name].assign(static_cast<std::size_t>(t.numel()), 0.0);
    accumulate(sums[name], t);
  }
  for (std::int64_t k = 1; k < n; ++k) {
    const std::string& dir = inputs[static_cast<std::size_t>(k)];
    std::map<std::string, Tensor> tensors;
    {
      const LoadedModel other = load_model_dir(dir, options.weights);  // freed before the next input loads
      if (std::string d = config_difference(first, other); !d.empty())
        fail("attend average: {}: {}", path_in(dir, "config.json"), d);
      // The vocabularies and SentencePiece models, compared as ensembles compare them (models/model_dir.hpp).
      for (ModelSide side : {ModelSide::Source, ModelSide::Target})
        if (std::string d = side_difference(side, first, other, "the first input"); !d.empty())
          fail("attend average: {}: {}", dir, d);
      tensors = tensors_to_average(other, path_in(dir, options.weights));
    }
    check_tensors(path_in(dir, options.weights), first_tensors, tensors);
    for (const auto& [name, t] : tensors) accumulate(sums.at(name), t);
  }

  AverageReport report;
  report.models = n;
  std::map<std::string, Tensor> mean;
  for (const auto& [name, t] : first_tensors) {
    std::vector<double>& sum = sums.at(name);
    for (double& x : sum) {
      x /= static_cast<double>(n);  // the sum of n equal numbers is exact in double, so their mean is the number
      if (!std::isfinite(x))  // float64 inputs near the largest double can add up to infinity
            fail("attend average: the mean of tensor '{}' is not finite (the inputs' values are too large to add up); "
             "nothing was written",
             printable(name));
    }
    // Back in the input's dtype: a mean lies between the inputs' values, so it fits.
    mean.emplace(name, tensor(sum, t.shape(), Float64).to(t.dtype()));
    report.tensors += 1;
    report.parameters += t.numel();
  }

  StagedModelDir staged(out, options.overwrite);
  report.replaced = staged.replaces() && out_holds_files;
  nlohmann::json info = first.info;
  info["averaged_from"] = inputs;
  write_file_atomic(path_in(staged.path(), "config.json"), info.dump(2) + "\n");
  for (const char* file : {"source.vocab", "target.vocab"})
    write_file_atomic(path_in(staged.path(), file), limits::read_bounded_file(path_in(inputs[0], file), "attend average"));
  if (first.codecs.source.is_subword()) {  // the SentencePiece models, under the names config.json gives them
    const nlohmann::json& subword = first.info.at("subword");
    first.codecs.source.subword()->save(path_in(staged.path(), subword.at("source_model").get<std::string>()));
    first.codecs.target.subword()->save(path_in(staged.path(), subword.at("target_model").get<std::string>()));
  }
  save_mean(first, mean, path_in(staged.path(), "model.safetensors"), n);
  load_model_dir(staged.path());  // the new model loads before it replaces anything
  staged.commit();
  return report;
}

}  // namespace attend
