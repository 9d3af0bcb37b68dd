#pragma once
// What `attend explain` and `attend explain --lstm` share: the one number
// format, the central finite difference, and the report that prints each
// gradient row beside its finite difference, counts the rows, and records
// every number for --json. Internal to tools/explain/explain*.cpp.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "autograd/grad_mode.hpp"
#include "core/tensor.hpp"

namespace attend::tools::explain_detail {

using Values = std::vector<double>;

constexpr double kEps = 1e-5;                 // central-difference step
constexpr double kAtol = 1e-9, kRtol = 1e-6;  // ✓ when |analytic - numeric| <= atol + rtol |numeric|
constexpr double kSameTol = 1e-12;            // fused against composed: the same math, up to rounding

// Every value and gradient, forward and backward, is printed this one way:
// 9 significant digits, sign always shown, 16 columns.
inline std::string num(double x) { return fmt::format("{:>+16.8e}", x == 0 ? 0.0 : x); }  // -0 printed as +0
inline std::string num0(double x) { return fmt::format("{:+.8e}", x == 0 ? 0.0 : x); }  // unpadded, in a sentence
inline std::string vec(const Values& v) {
  std::string out;
  for (double x : v) out += num(x);
  return out;
}

// ∂L/∂x[i] by central differences. x is perturbed in place through its handle,
// so a parameter inside a model is perturbed too; it is restored afterwards.
inline double numeric(Tensor x, std::int64_t i, const std::function<double()>& loss) {
  NoGradGuard no_grad;
  double* px = x.data<double>();
  const double x0 = px[i];
  px[i] = x0 + kEps;
  const double up = loss();
  px[i] = x0 - kEps;
  const double down = loss();
  px[i] = x0;
  return (up - down) / (2 * kEps);
}

inline double max_diff(const Values& a, const Values& b) {
  double d = 0;
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) d = std::max(d, std::abs(a[i] - b[i]));
  return d;
}

// The text, the count of rows checked and failed, and every number as JSON:
//   values:    {name: {shape, data}}                    parameters, inputs, intermediates
//   gradients: {name: {shape, analytic, numeric}}       one entry per ∂L/∂x, every element
struct Report {
  std::string text;
  int checked = 0, failed = 0;
  int name_width = 15;  // the gradient column
  nlohmann::ordered_json json = nlohmann::ordered_json::object();

  template <class... Args>
  void line(fmt::format_string<Args...> f, Args&&... args) {
    text += fmt::format(f, std::forward<Args>(args)...);
    text += '\n';
  }
  void value(const std::string& name, const std::vector<std::int64_t>& shape, const Values& data) {
    json["values"][name] = {{"shape", shape}, {"data", data}};
  }
  // Prints a matrix (rows, cols) as `name[r,·]` lines, and records it.
  void matrix(const std::string& name, const std::string& what, std::int64_t rows, std::int64_t cols,
              const Values& data) {
    value(name, {rows, cols}, data);
    line("  {} ({}, {}){}", name, rows, cols, what.empty() ? "" : ": " + what);
    for (std::int64_t r = 0; r < rows; ++r)
      line("     {:<10}{}", fmt::format("{}[{},·]", name, r + 1),
           vec(Values(data.begin() + r * cols, data.begin() + (r + 1) * cols)));
  }
  void vector(const std::string& name, const std::string& what, const Values& data) {
    value(name, {static_cast<std::int64_t>(data.size())}, data);
    line("  {:<13}{}{}", name, vec(data), what.empty() ? "" : "   " + what);
  }
  void row(const std::string& name, double analytic, double numeric_value, const std::string& formula) {
    const double diff = std::abs(analytic - numeric_value);
    const bool ok = diff <= kAtol + kRtol * std::abs(numeric_value);
    ++checked;
    failed += ok ? 0 : 1;
    line("  {:<{}}{}{}{:>10.1e}  {}  {}", name, name_width, num(analytic), num(numeric_value), diff, ok ? "✓" : "✗",
         formula);
  }
  // Every element of one gradient: a row each, and a JSON entry for the whole.
  void rows(const std::string& key, const std::vector<std::int64_t>& shape, const Values& analytic,
            const std::function<std::string(std::int64_t)>& label,
            const std::function<double(std::int64_t)>& numeric_of,
            const std::function<std::string(std::int64_t)>& formula) {
    Values numerics;
    for (std::size_t n = 0; n < analytic.size(); ++n) {
      const auto i = static_cast<std::int64_t>(n);
      numerics.push_back(numeric_of(i));
      row(label(i), analytic[n], numerics.back(), formula(i));
    }
    json["gradients"][key] = {{"shape", shape}, {"analytic", analytic}, {"numeric", numerics}};
  }
  void same(const std::string& what, double diff) {  // two computations of the same numbers
    const bool ok = diff <= kSameTol;
    ++checked;
    failed += ok ? 0 : 1;
    line("  {} {}: max |Δ| = {:.1e}", ok ? "✓" : "✗", what, diff);
  }
  void exact(const std::string& what, bool holds) {  // a claim that holds exactly or not at all
    ++checked;
    failed += holds ? 0 : 1;
    line("  {} {}", holds ? "✓" : "✗", what);
  }
};

}  // namespace attend::tools::explain_detail
