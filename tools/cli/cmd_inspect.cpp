// attend inspect FILE.safetensors: lists every tensor (dtype, shape, min/mean/max),
// the metadata and the totals. An invalid file is an attend::Error (exit code 1).
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/io/printable.hpp"
#include "core/io/safetensors.hpp"
#include "tools/cli/commands.hpp"
#include "tools/cli/inspect.hpp"

namespace attend::tools {

namespace {

struct Stats {
  double min = std::numeric_limits<double>::infinity();
  double max = -std::numeric_limits<double>::infinity();
  double mean = 0;
  bool has_nan = false;
};

Stats stats_of(const Tensor& t) {
  Stats s;
  double sum = 0;
  dispatch(t.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T* x = t.data<T>();
    for (std::int64_t i = 0; i < t.numel(); ++i) {
      const double v = x[i];
      if (std::isnan(v)) s.has_nan = true;
      s.min = std::min(s.min, v);
      s.max = std::max(s.max, v);
      sum += v;
    }
  });
  s.mean = sum / static_cast<double>(t.numel());
  // One NaN makes every summary meaningless; show it rather than hide it.
  if (s.has_nan) s.min = s.max = s.mean = std::numeric_limits<double>::quiet_NaN();
  return s;
}

}  // namespace

// The rows of the listing: every tensor, and every I8 array (an int8 model's
// weights) as a tensor of its values, under their names' order.
struct Listed {
  std::string dtype;
  Tensor values;
  std::uint64_t bytes = 0;
};

std::map<std::string, Listed> listed_tensors(const SafetensorsFile& file) {
  std::map<std::string, Listed> out;
  for (const auto& [name, t] : file.tensors)
    out[name] = {t.dtype() == Float64 ? "F64" : "F32", t, static_cast<std::uint64_t>(t.numel()) * dtype_size(t.dtype())};
  for (const auto& [name, a] : file.int8) {
    Tensor values = empty(a.shape, Float32);
    std::copy(a.values.begin(), a.values.end(), values.data<float>());
    out[name] = {"I8", std::move(values), a.values.size()};
  }
  return out;
}

std::string inspect_safetensors(const std::string& path) {
  const SafetensorsFile file = load_safetensors(path);
  const std::map<std::string, Listed> tensors = listed_tensors(file);

  // Names as escapes where they hold control characters: a tensor name is the
  // file's to choose, and must not reach the terminal as an escape sequence.
  std::map<std::string, std::string> shown;
  for (const auto& [name, t] : tensors) shown[name] = printable(name);
  std::size_t name_width = 4, shape_width = 5;
  for (const auto& [name, t] : tensors) {
    name_width = std::max(name_width, shown[name].size());
    shape_width = std::max(shape_width, t.values.shape().str().size());
  }

  std::string out = fmt::format("{}\n\n", printable(path));
  const std::string rule(name_width + shape_width + 63, '-');  // the width of a row
  out += fmt::format("{:<{}}  {:<5}  {:<{}}  {:>10}  {:>12}  {:>12}  {:>12}\n", "name", name_width, "dtype", "shape",
                     shape_width, "numel", "min", "mean", "max");
  out += rule + "\n";
  std::int64_t parameters = 0;
  std::uint64_t bytes = 0;
  for (const auto& [name, listed] : tensors) {
    const Tensor& t = listed.values;
    out += fmt::format("{:<{}}  {:<5}  {:<{}}  {:>10}", shown[name], name_width, listed.dtype, t.shape().str(), shape_width,
                       t.numel());
    if (t.numel() == 0) {
      out += fmt::format("  {:>12}  {:>12}  {:>12}\n", "-", "-", "-");
    } else {
      const Stats s = stats_of(t);
      out += fmt::format("  {:>12.6g}  {:>12.6g}  {:>12.6g}\n", s.min, s.mean, s.max);
    }
    parameters += t.numel();
    bytes += listed.bytes;
  }
  out += rule + "\n";

  if (file.metadata.empty()) {
    out += "\nmetadata: none\n";
  } else {
    out += "\nmetadata:\n";
    for (const auto& [key, value] : file.metadata)  // JSON-quoted: shows newlines and control characters
      out += fmt::format("  {}: {}\n", nlohmann::json(key).dump(), nlohmann::json(value).dump());
  }
  std::error_code ec;  // the file may have gone since it was read; the totals stand anyway
  const auto file_bytes = std::filesystem::file_size(path, ec);
  out += fmt::format("\n{} tensors, {} parameters, {} bytes of tensor data ({} bytes in the file)\n",
                     tensors.size(), parameters, bytes, ec ? std::string("?") : std::to_string(file_bytes));
  return out;
}

void add_inspect_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("inspect", "List the tensors, metadata and totals of a safetensors file");
  auto path = std::make_shared<std::string>();
  cmd->add_option("file", *path, "The .safetensors file")->required();
  cmd->callback([path] { fmt::print("{}", inspect_safetensors(*path)); });
}

}  // namespace attend::tools
