// gradcheck's comparison: the analytic gradient from one backward against
// central differences, element by element or along random directions.
// The per-node mode is in gradcheck_nodes.cpp, the report's text in
// gradcheck_report.cpp.
#include <algorithm>
#include <cmath>

#include "autograd/gradcheck/gradcheck.hpp"
#include "autograd/grad_mode.hpp"
#include "core/random.hpp"

namespace attend {

namespace {

void check_options(const GradcheckOptions& o, std::size_t n_inputs) {
  if (!(o.eps > 0 && std::isfinite(o.eps))) fail("gradcheck: eps must be positive and finite, got {}", o.eps);
  if (!(o.atol >= 0 && std::isfinite(o.atol))) fail("gradcheck: atol must be >= 0 and finite, got {}", o.atol);
  if (!(o.rtol >= 0 && std::isfinite(o.rtol))) fail("gradcheck: rtol must be >= 0 and finite, got {}", o.rtol);
  if (o.directions < 0) fail("gradcheck: directions must be >= 0 (0: every element), got {}", o.directions);
  if (o.max_reported < 0) fail("gradcheck: max_reported must be >= 0, got {}", o.max_reported);
  if (o.names.size() > n_inputs) fail("gradcheck: {} names for {} inputs", o.names.size(), n_inputs);
}

// The outputs of fn must be float64 tensors, as many each time.
void check_outputs(const Tensors& ys, std::size_t expected) {
  if (expected != 0 && ys.size() != expected)
    fail("gradcheck: fn returned {} outputs, then {}; it must return the same outputs each time", expected, ys.size());
  if (ys.empty()) fail("gradcheck: fn returned no outputs");
  for (std::size_t k = 0; k < ys.size(); ++k) {
    check_defined("gradcheck", ys[k], "an output of fn");
    if (ys[k].dtype() != Float64)
      fail("gradcheck: output {} of fn is {}; finite differences in float32 are noise (a step of 1e-6 is below its "
           "resolution), so gradcheck needs fn to compute in float64: build its tensors as float64 and convert "
           "modules with Module::to(attend::Float64)",
           k, ys[k].dtype());
  }
}

// L = sum_k sum(y_k * R_k), computed without recording.
double weighted_sum(const Tensors& ys, const Tensors& rs) {
  check_outputs(ys, rs.size());
  double total = 0;
  for (std::size_t k = 0; k < ys.size(); ++k) {
    if (!(ys[k].shape() == rs[k].shape()))
      fail("gradcheck: output {} of fn had shape {}, then {}; it must not change", k, rs[k].shape(), ys[k].shape());
    const double* y = ys[k].data<double>();
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

double dot(const Tensor& a, const Tensor& b) {
  const double *pa = a.data<double>(), *pb = b.data<double>();
  double s = 0;
  for (std::int64_t i = 0, n = a.numel(); i < n; ++i) s += pa[i] * pb[i];
  return s;
}

// Folds one comparison into the input's report.
void add_check(InputReport& r, ElementCheck c, int max_reported, double& worst_score) {
  ++r.checked;
  const bool ok = c.abs_error <= c.tolerance;  // false for NaN too
  r.max_abs_error = std::max(r.max_abs_error, c.abs_error);
  if (std::abs(c.numeric) > 0) r.max_rel_error = std::max(r.max_rel_error, c.rel_error);
  if (std::isnan(c.abs_error)) r.max_abs_error = r.max_rel_error = NAN;
  const double score = std::isnan(c.abs_error) ? INFINITY : c.abs_error / std::max(c.tolerance, 1e-300);
  if (score > worst_score) {
    worst_score = score;
    r.worst = c;
  }
  if (!ok) {
    r.passed = false;
    ++r.failed;
    if (static_cast<int>(r.failures.size()) < max_reported) r.failures.push_back(std::move(c));
  }
}

ElementCheck make_check(std::vector<std::int64_t> index, double analytic, double numeric, double tolerance) {
  ElementCheck c;
  c.index = std::move(index);
  c.analytic = analytic;
  c.numeric = numeric;
  c.abs_error = std::abs(analytic - numeric);
  c.rel_error = numeric != 0 ? c.abs_error / std::abs(numeric) : 0;
  c.tolerance = tolerance;
  return c;
}

// The inputs to differentiate: those that require grad, each checked to be a
// float64 leaf that is passed once. Error when there is none.
std::vector<int> checked_inputs(const Tensors& inputs) {
  std::vector<int> checked;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    check_defined("gradcheck", inputs[i], "an input");
    for (std::size_t j = 0; j < i; ++j)
      if (inputs[i].same(inputs[j])) fail("gradcheck: input {} is the same tensor as input {}; pass it once", i, j);
    if (!inputs[i].requires_grad()) continue;
    if (inputs[i].dtype() != Float64)
      fail("gradcheck: input {} is {}; finite differences need float64 (convert with .to(attend::Float64))", i,
           inputs[i].dtype());
    if (!inputs[i].is_leaf()) fail("gradcheck: input {} is not a leaf; pass tensors created directly, not computed", i);
    checked.push_back(static_cast<int>(i));
  }
  if (checked.empty()) fail("gradcheck: no input requires grad; call requires_grad_() on the inputs to check");
  return checked;
}

// One backward's gradients of L = sum_k sum(y_k * R_k), R_k random (rs): raw is
// each input's .grad after it, analytic the same less the seed G that .grad held
// before (with check_accumulation; else raw itself). The inputs' .grad are as
// the caller left them afterwards.
struct Analytic {
  Tensors rs, seeds, raw, analytic;
};

Analytic analytic_gradients(const MultiOutputFn& fn, const Tensors& inputs, const GradcheckOptions& options,
                            Generator& gen) {
  Analytic out;
  // .grad seeded with G (or empty), one backward, .grad - G.
  std::vector<Tensor> saved_grads;
  out.seeds.resize(inputs.size());
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    Tensor t = inputs[i];  // a handle: set_grad reaches the caller's tensor
    saved_grads.push_back(t.grad());
    t.zero_grad();
    if (options.check_accumulation && t.requires_grad()) {
      out.seeds[i] = normal(t.shape(), 0.0, 1.0, gen, Float64);
      t.set_grad(out.seeds[i].clone());
    }
  }
  auto restore_grads = [&] {
    for (std::size_t i = 0; i < inputs.size(); ++i) Tensor(inputs[i]).set_grad(saved_grads[i]);
  };
  try {
    EnableGradGuard enable_grad;
    ReplayGuard no_replay(false);
    Tensors ys = fn(inputs);
    check_outputs(ys, 0);
    Tensors roots, grads;
    for (const Tensor& y : ys) {
      out.rs.push_back(normal(y.shape(), 0.0, 1.0, gen, Float64));
      if (y.requires_grad()) {
        roots.push_back(y);
        grads.push_back(out.rs.back());
      }
    }
    if (!roots.empty()) backward(roots, grads);
    for (const Tensor& t : inputs) out.raw.push_back(t.grad().defined() ? t.grad().clone() : zeros_like(t));
  } catch (...) {
    restore_grads();
    throw;
  }
  restore_grads();
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    out.analytic.push_back(out.raw[i].clone());
    if (out.seeds[i].defined()) out.analytic.back().add_(out.seeds[i], -1.0);
  }
  return out;
}

// Input i's analytic gradient against central differences of loss(), element by
// element. Returns whether raw .grad (the seed not subtracted) matched instead.
template <class Loss>
bool compare_elements(Tensor x, const Tensor& analytic, const Tensor& raw, const GradcheckOptions& options,
                      const Loss& loss, InputReport& r) {
  double* px = x.data<double>();
  const double* pa = analytic.data<double>();
  const double* pr = raw.data<double>();
  double worst_score = -1;
  bool raw_matches = true;
  for (std::int64_t j = 0; j < x.numel(); ++j) {
    const double original = px[j];
    px[j] = original + options.eps;
    const double plus = loss();
    px[j] = original - options.eps;
    const double minus = loss();
    px[j] = original;
    const double numeric = (plus - minus) / (2 * options.eps);
    const double tolerance = options.atol + options.rtol * std::abs(numeric);
    raw_matches = raw_matches && std::abs(pr[j] - numeric) <= tolerance;
    add_check(r, make_check(unravel(j, x.shape()), pa[j], numeric, tolerance), options.max_reported, worst_score);
  }
  return raw_matches;
}

// The same along options.directions random directions v: the analytic gradient
// dotted with v against the central difference of loss() along v.
template <class Loss>
bool compare_directions(Tensor x, const Tensor& analytic, const Tensor& raw, const GradcheckOptions& options,
                        const Loss& loss, Generator& gen, InputReport& r) {
  double worst_score = -1;
  bool raw_matches = true;
  const Tensor original = x.clone();
  for (int d = 0; d < options.directions; ++d) {
    const Tensor v = normal(x.shape(), 0.0, 1.0, gen, Float64);
    x.copy_(original).add_(v, options.eps);
    const double plus = loss();
    x.copy_(original).add_(v, -options.eps);
    const double minus = loss();
    x.copy_(original);
    const double numeric = (plus - minus) / (2 * options.eps);
    // Each element may be off by its own tolerance; over a random v these add in quadrature.
    const double tolerance = options.atol * std::sqrt(dot(v, v)) + options.rtol * std::abs(numeric);
    raw_matches = raw_matches && std::abs(dot(raw, v) - numeric) <= tolerance;
    add_check(r, make_check({}, dot(analytic, v), numeric, tolerance), options.max_reported, worst_score);
  }
  return raw_matches;
}

}  // namespace

namespace gradcheck_detail {

GradcheckReport empty_report(const GradcheckOptions& options) {
  GradcheckReport report;
  report.mode = options.directions == 0 ? "every element"
                                        : fmt::format("{} random direction{} per input", options.directions,
                                                      options.directions == 1 ? "" : "s");
  report.eps = options.eps;
  report.atol = options.atol;
  report.rtol = options.rtol;
  return report;
}

GradcheckReport compare(const MultiOutputFn& fn, const Tensors& inputs, const GradcheckOptions& options) {
  check_options(options, inputs.size());
  const std::vector<int> checked = checked_inputs(inputs);
  Generator gen(options.seed);
  const Analytic g = analytic_gradients(fn, inputs, options, gen);

  GradcheckReport report = empty_report(options);
  NoGradGuard no_grad;
  ReplayGuard no_replay(false);
  auto loss = [&] { return weighted_sum(fn(inputs), g.rs); };
  for (int i : checked) {
    InputReport r;
    r.input = i;
    r.name = i < static_cast<int>(options.names.size()) && !options.names[i].empty() ? options.names[i]
                                                                                      : fmt::format("input {}", i);
    r.shape = inputs[i].shape();
    // does .grad without the seed subtracted match? (an assignment)
    const bool raw_matches = options.directions == 0
                                 ? compare_elements(inputs[i], g.analytic[i], g.raw[i], options, loss, r)
                                 : compare_directions(inputs[i], g.analytic[i], g.raw[i], options, loss, gen, r);
    r.assigns_instead_of_adding = !r.passed && g.seeds[i].defined() && raw_matches && r.checked > 0;
    report.passed = report.passed && r.passed;
    report.inputs.push_back(std::move(r));
  }
  return report;
}

}  // namespace gradcheck_detail

GradcheckReport gradcheck(const MultiOutputFn& fn, const Tensors& inputs, const GradcheckOptions& options) {
  GradcheckReport report = gradcheck_detail::compare(fn, inputs, options);
  if (options.check_accumulation) gradcheck_detail::check_accumulation(fn, inputs, options, report);
  if (!report.passed && options.per_node) gradcheck_detail::check_nodes(fn, inputs, options, report);
  return report;
}

GradcheckReport gradcheck(const SingleOutputFn& fn, const Tensors& inputs, const GradcheckOptions& options) {
  return gradcheck(MultiOutputFn([&](const Tensors& in) { return Tensors{fn(in)}; }), inputs, options);
}

GradcheckReport gradcheck_nodes(const MultiOutputFn& fn, const Tensors& inputs, const GradcheckOptions& options) {
  check_options(options, inputs.size());
  GradcheckReport report = gradcheck_detail::empty_report(options);
  gradcheck_detail::check_nodes(fn, inputs, options, report);
  return report;
}

GradcheckReport gradcheck_nodes(const SingleOutputFn& fn, const Tensors& inputs, const GradcheckOptions& options) {
  return gradcheck_nodes(MultiOutputFn([&](const Tensors& in) { return Tensors{fn(in)}; }), inputs, options);
}

}  // namespace attend
