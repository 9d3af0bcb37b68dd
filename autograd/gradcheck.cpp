#include "autograd/gradcheck.hpp"

#include <algorithm>
#include <cmath>

#include "autograd/grad_mode.hpp"
#include "autograd/node.hpp"
#include "core/random.hpp"

namespace attend {

namespace {

// L = sum_k sum(y_k * R_k), computed without recording.
double weighted_sum(const std::vector<Tensor>& ys, const std::vector<Tensor>& rs) {
  double total = 0;
  for (std::size_t k = 0; k < ys.size(); ++k) {
    const double* y = ys[k].to(Float64).data<double>();
    const double* r = rs[k].data<double>();
    for (std::int64_t i = 0, n = ys[k].numel(); i < n; ++i) total += y[i] * r[i];
  }
  return total;
}

std::vector<std::int64_t> unravel(std::int64_t flat, const Shape& shape) {
  std::vector<std::int64_t> index(static_cast<std::size_t>(shape.rank()));
  for (int d = shape.rank() - 1; d >= 0; --d) {
    index[d] = shape[d] == 0 ? 0 : flat % shape[d];
    flat = shape[d] == 0 ? 0 : flat / shape[d];
  }
  return index;
}

}  // namespace

double GradcheckReport::max_abs_error() const {
  double m = 0;
  for (const auto& r : inputs) m = std::max(m, r.max_abs_error);
  return m;
}

double GradcheckReport::max_rel_error() const {
  double m = 0;
  for (const auto& r : inputs) m = std::max(m, r.max_rel_error);
  return m;
}

std::string GradcheckReport::str() const {
  std::string out = passed ? "gradcheck passed\n" : "gradcheck FAILED\n";
  for (const auto& r : inputs)
    out += fmt::format("  input {} {}: max abs error {:.3e}, max rel error {:.3e} at [{}] (analytic {:.6g}, numeric {:.6g}){}\n",
                       r.input, r.shape, r.max_abs_error, r.max_rel_error, fmt::join(r.worst_index, ", "),
                       r.analytic_at_worst, r.numeric_at_worst, r.passed ? "" : "  <-- wrong");
  return out;
}

GradcheckReport gradcheck(const SingleOutputFn& fn, const std::vector<Tensor>& inputs, const GradcheckOptions& options) {
  return gradcheck(MultiOutputFn([&](const std::vector<Tensor>& in) { return std::vector<Tensor>{fn(in)}; }), inputs,
                   options);
}

GradcheckReport gradcheck(const MultiOutputFn& fn, const std::vector<Tensor>& inputs, const GradcheckOptions& options) {
  std::vector<int> checked;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    check_defined("gradcheck", inputs[i], "an input");
    if (!inputs[i].requires_grad()) continue;
    if (inputs[i].dtype() != Float64)
      fail("gradcheck: input {} is {}; finite differences need float64 (convert with .to(attend::Float64))", i,
           inputs[i].dtype());
    if (!inputs[i].is_leaf()) fail("gradcheck: input {} is not a leaf; pass tensors created directly, not computed", i);
    checked.push_back(static_cast<int>(i));
  }
  if (checked.empty()) fail("gradcheck: no input requires grad; call requires_grad_() on the inputs to check");

  // The analytic gradient, with the caller's .grad put aside.
  std::vector<Tensor> saved_grads;
  for (Tensor t : inputs) {  // a handle: zero_grad() reaches the caller's tensor
    saved_grads.push_back(t.grad());
    t.zero_grad();
  }
  EnableGradGuard enable_grad;
  std::vector<Tensor> ys = fn(inputs);
  Generator gen(options.seed);
  std::vector<Tensor> rs, grads;
  std::vector<Tensor> roots;
  for (const Tensor& y : ys) {
    check_defined("gradcheck", y, "an output of fn");
    rs.push_back(normal(y.shape(), 0.0, 1.0, gen, Float64));
    if (y.requires_grad()) {
      roots.push_back(y);
      grads.push_back(rs.back().to(y.dtype()));
    }
  }
  if (!roots.empty()) backward(roots, grads);
  std::vector<Tensor> analytic;
  for (const Tensor& t : inputs) analytic.push_back(t.grad().defined() ? t.grad().clone() : zeros_like(t));

  // The numeric gradient, one element at a time.
  GradcheckReport report;
  NoGradGuard no_grad;
  for (int i : checked) {
    Tensor x = inputs[i];
    double* px = x.data<double>();
    const double* pa = analytic[i].data<double>();
    InputReport r;
    r.input = i;
    r.shape = x.shape();
    double worst_score = -1;
    for (std::int64_t j = 0; j < x.numel(); ++j) {
      const double original = px[j];
      px[j] = original + options.eps;
      const double plus = weighted_sum(fn(inputs), rs);
      px[j] = original - options.eps;
      const double minus = weighted_sum(fn(inputs), rs);
      px[j] = original;
      const double numeric = (plus - minus) / (2 * options.eps);
      const double abs_err = std::abs(pa[j] - numeric);
      const double rel_err = abs_err / std::max(std::abs(numeric), 1e-12);
      const bool ok = abs_err <= options.atol + options.rtol * std::abs(numeric);
      r.max_abs_error = std::max(r.max_abs_error, abs_err);
      if (std::abs(numeric) > options.atol) r.max_rel_error = std::max(r.max_rel_error, rel_err);
      const double score = abs_err / (options.atol + options.rtol * std::abs(numeric));
      if (score > worst_score || std::isnan(abs_err)) {
        worst_score = std::isnan(abs_err) ? INFINITY : score;
        r.worst_index = unravel(j, x.shape());
        r.analytic_at_worst = pa[j];
        r.numeric_at_worst = numeric;
      }
      if (!ok) r.passed = false;
    }
    report.passed = report.passed && r.passed;
    report.inputs.push_back(std::move(r));
  }
  for (std::size_t i = 0; i < inputs.size(); ++i) Tensor(inputs[i]).set_grad(saved_grads[i]);
  return report;
}

}  // namespace attend
