#include "models/quantize/quantize.hpp"

#include <cmath>
#include <set>

#include <fmt/format.h>

#include "core/io/safetensors.hpp"
#include "autograd/grad_mode.hpp"
#include "core/tensor.hpp"

namespace attend {

const std::shared_ptr<const blas::PackedMatrix>& Int8Weights::at(const std::string& name) const {
  auto it = packed.find(name);
  if (it == packed.end()) fail("int8 model: '{}' is not one of its int8 weights", name);
  return it->second;
}

bool is_quantized_parameter(const std::string& name, const Tensor& value) {
  return value.dim() == 2 && !name.starts_with("source_embed.") && !name.starts_with("target_embed.");
}

namespace {

// The parameter's value becomes scale_n * q[n, k]: the weights the int8 products use.
void put_dequantized(Tensor& parameter, const blas::QuantizedRows& q) {
  float* w = parameter.data<float>();
  for (std::int64_t n = 0; n < q.n; ++n)
    for (std::int64_t k = 0; k < q.k; ++k)
      w[n * q.k + k] = q.scales[static_cast<std::size_t>(n)] * static_cast<float>(q.values[static_cast<std::size_t>(n * q.k + k)]);
}

// Packs every quantized matrix, sets the parameters to their dequantized values
// and hands the packs to the model.
void attach(Seq2Seq& model, std::map<std::string, blas::QuantizedRows> rows) {
  auto weights = std::make_shared<Int8Weights>();
  for (auto& [name, q] : model.named_parameters()) {
    auto it = rows.find(name);
    if (it == rows.end()) continue;
    auto packed = std::make_shared<blas::PackedMatrix>(
        blas::PackedMatrix::from_int8(it->second.values.data(), it->second.scales.data(), it->second.n, it->second.k));
    packed->set_streamed(true);  // decoding's other weights pass through L2 between two products by this one
    weights->packed.emplace(name, std::move(packed));
    NoGradGuard no_grad;
    Tensor parameter = q;
    put_dequantized(parameter, it->second);
  }
  weights->rows = std::move(rows);
  model.set_int8(std::move(weights));
}

void check_float32(const Seq2Seq& model, const char* op) {
  if (model.dtype() != Float32) fail("{}: int8 models are made from float32 models, this one is {}", op, model.dtype());
  if (model.int8() != nullptr) fail("{}: the model is int8 already", op);
}

}  // namespace

void quantize(Seq2Seq& model) {
  check_float32(model, "quantize");
  std::map<std::string, blas::QuantizedRows> rows;
  for (const auto& [name, value] : model.named_parameters()) {
    if (!is_quantized_parameter(name, value)) continue;
    try {
      rows.emplace(name, blas::quantize_rows(value.data<float>(), value.size(0), value.size(1), value.size(1)));
    } catch (const Error& e) {
      fail("quantize: parameter '{}': {}", name, e.what());
    }
  }
  attach(model, std::move(rows));
}

void save_int8(const Seq2Seq& model, const std::string& path, const std::map<std::string, std::string>& metadata) {
  const Int8Weights* int8 = model.int8();
  if (int8 == nullptr) fail("save_int8: {}: the model is not int8 (quantize it first)", path);
  std::map<std::string, Tensor> tensors;
  std::map<std::string, Int8Array> arrays;
  for (const auto& [name, value] : model.named_parameters()) {
    auto it = int8->rows.find(name);
    if (it == int8->rows.end()) {
      tensors.emplace(name, value);
      continue;
    }
    const blas::QuantizedRows& q = it->second;
    arrays.emplace(name, Int8Array{Shape{q.n, q.k}, q.values});
    Tensor scales = empty({q.n}, Float32);
    std::copy(q.scales.begin(), q.scales.end(), scales.data<float>());
    tensors.emplace(name + ".scale", std::move(scales));
  }
  std::map<std::string, std::string> all = metadata;
  all["weights"] = "int8";
  save_safetensors(path, tensors, all, arrays);
}

namespace {

// The I8 array `name` and its scales from the file, checked against the parameter's shape.
blas::QuantizedRows read_quantized(const SafetensorsFile& file, const std::string& path, const std::string& name,
                                   const Tensor& parameter) {
  auto array = file.int8.find(name);
  if (array == file.int8.end())
    fail("load_int8: {}: '{}' must be an I8 array in an int8 model{}", path, name,
         file.tensors.count(name) ? fmt::format(", and it is {}", file.tensors.at(name).dtype()) : ", and it is missing");
  const std::int64_t n = parameter.size(0), k = parameter.size(1);
  if (array->second.shape != parameter.shape())
    fail("load_int8: {}: '{}' has shape {}, the model's is {}", path, name, array->second.shape, parameter.shape());
  auto scale = file.tensors.find(name + ".scale");
  if (scale == file.tensors.end()) fail("load_int8: {}: '{}.scale' is missing", path, name);
  if (scale->second.dtype() != Float32 || scale->second.shape() != Shape{n})
    fail("load_int8: {}: '{}.scale' must be F32 [{}], got {} {}", path, name, n, scale->second.dtype(), scale->second.shape());
  blas::QuantizedRows q{n, k, array->second.values, std::vector<float>(static_cast<std::size_t>(n))};
  std::copy_n(scale->second.data<float>(), n, q.scales.begin());
  for (std::int64_t r = 0; r < n; ++r)
    if (!(q.scales[r] >= 0) || !std::isfinite(q.scales[r]))
      fail("load_int8: {}: '{}.scale' row {} is {}; scales are finite and >= 0", path, name, r, q.scales[r]);
  for (std::size_t i = 0; i < q.values.size(); ++i)
    if (q.values[i] == -128)
      fail("load_int8: {}: '{}' holds -128 at row {} column {}; int8 weights are in [-127, 127]", path, name,
           static_cast<std::int64_t>(i) / k, static_cast<std::int64_t>(i) % k);
  return q;
}

}  // namespace

void load_int8(Seq2Seq& model, const std::string& path) {
  check_float32(model, "load_int8");
  const SafetensorsFile file = load_safetensors(path);
  std::map<std::string, Tensor> floats;
  std::map<std::string, blas::QuantizedRows> rows;
  std::set<std::string> known;
  for (const auto& [name, value] : model.named_parameters()) {
    known.insert(name);
    if (!is_quantized_parameter(name, value)) {
      if (file.tensors.count(name)) floats.emplace(name, file.tensors.at(name));
      continue;  // a missing one is named by load_state_dict below
    }
    rows.emplace(name, read_quantized(file, path, name, value));
    known.insert(name + ".scale");
  }
  for (const auto& [name, a] : file.int8)
    if (!known.count(name)) fail("load_int8: {}: '{}' is not an int8 weight of this model", path, name);
  for (const auto& [name, t] : file.tensors)
    if (!known.count(name)) fail("load_int8: {}: '{}' is not a parameter of this model", path, name);
  try {
    model.load_state_dict(floats, /*strict=*/false);
    for (const auto& [name, value] : model.named_parameters())
      if (!is_quantized_parameter(name, value) && !floats.count(name)) fail("'{}' is missing", name);
  } catch (const Error& e) {
    fail("load_int8: {}: {}", path, e.what());
  }
  attach(model, std::move(rows));
}

}  // namespace attend
