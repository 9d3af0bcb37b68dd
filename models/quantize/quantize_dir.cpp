#include "models/quantize/quantize_dir.hpp"

#include <filesystem>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/io/file_io.hpp"
#include "core/io/limits.hpp"
#include "models/model_dir.hpp"
#include "models/quantize/quantize.hpp"

namespace attend {

namespace {

std::uint64_t file_bytes(const std::string& path) {
  std::error_code ec;
  const std::uintmax_t size = std::filesystem::file_size(path, ec);
  return ec ? 0 : static_cast<std::uint64_t>(size);
}

// config.json's text for the int8 model: the input's, marked.
nlohmann::json int8_info(const LoadedModel& m, const std::string& in) {
  nlohmann::json info = m.info;
  info["weights"] = "int8";
  info["quantized_from"] = in;
  return info;
}

}  // namespace

QuantizeReport quantize_model_dir(const std::string& in, const std::string& out, bool overwrite) {
  std::error_code ec;
  if (std::filesystem::exists(out, ec) && std::filesystem::equivalent(in, out, ec))
    fail("attend quantize: {} is the input itself; name a new directory for the int8 model", out);
  LoadedModel m = load_model_dir(in);
  if (m.int8) fail("attend quantize: {} is an int8 model already", in);
  QuantizeReport report;
  quantize(*m.model);
  for (const auto& [name, value] : m.model->named_parameters()) {
    if (is_quantized_parameter(name, value)) {
      report.matrices += 1;
      report.quantized += value.numel();
    } else {
      report.kept += value.numel();
    }
  }
  StagedModelDir staged(out, overwrite);
  report.replaced = staged.replaces();
  const std::string dir = staged.path();
  save_model_description(dir, m.config, m.source_vocab, m.target_vocab, m.codecs, int8_info(m, in));
  save_int8(*m.model, path_in(dir, "model.safetensors"), {{"quantized_from", in}});
  load_model_dir(dir);  // the new model loads before it replaces anything
  report.bytes_in = file_bytes(path_in(in, "model.safetensors"));
  report.bytes_out = file_bytes(path_in(dir, "model.safetensors"));
  staged.commit();
  return report;
}

}  // namespace attend
