// layers/attention/*: values and gradients against PyTorch 1.13. The files in
// tests/data/attention_*.safetensors come from tests/reference/torch_attention.py,
// which writes the same formulas in plain torch (masked_fill(-inf) + softmax).
#include <cmath>
#include <memory>
#include <string>

#include <doctest/doctest.h>

#include "autograd/autograd.hpp"
#include "core/core.hpp"
#include "core/io/safetensors.hpp"
#include "layers/attention/attention.hpp"

using namespace attend;

namespace {

// |got - want| <= rtol * |want| + atol everywhere; atol covers entries that are
// (nearly) zero, where a relative bound is meaningless.
void check_close(const std::string& what, const Tensor& got, const Tensor& want, double rtol, double atol) {
  REQUIRE_MESSAGE(got.shape() == want.shape(), what, ": shape ", got.shape().str(), " vs ", want.shape().str());
  REQUIRE(got.dtype() == want.dtype());
  const std::vector<double> g = got.to_vector(), w = want.to_vector();
  double worst = 0;
  std::size_t at = 0;
  for (std::size_t i = 0; i < g.size(); ++i) {
    const double excess = std::abs(g[i] - w[i]) - (rtol * std::abs(w[i]) + atol);
    if (i == 0 || excess > worst) worst = excess, at = i;
  }
  CHECK_MESSAGE(worst <= 0, what, ": element ", at, " is ", g[at], ", torch has ", w[at]);
}

// Runs one kind against one file, in one dtype.
void check_against_torch(const std::string& file, nn::Module& module,
                         const std::function<nn::AttentionOutput(const Tensor&, const Tensor&, const Tensor&)>& forward,
                         DType dtype) {
  const SafetensorsFile f = load_safetensors(std::string(ATTEND_TEST_DATA) + "/" + file);
  const std::string prefix = dtype == Float64 ? "float64/" : "float32/";
  const double rtol = dtype == Float64 ? 1e-10 : 1e-5, atol = dtype == Float64 ? 1e-13 : 1e-6;
  auto get = [&](const std::string& name) {
    auto it = f.tensors.find(prefix + name);
    REQUIRE_MESSAGE(it != f.tensors.end(), file, " has no ", prefix + name);
    REQUIRE(it->second.dtype() == dtype);
    return it->second;
  };
  module.to(dtype);
  std::map<std::string, Tensor> state;
  for (const auto& [name, p] : module.named_parameters()) state[name] = get(name);
  module.load_state_dict(state);
  module.zero_grad();

  Tensor query = get("query").clone().requires_grad_();
  Tensor states = get("encoder_states").clone().requires_grad_();
  auto [context, weights] = forward(query, states, get("mask"));
  const std::string where = file + " " + prefix;
  check_close(where + "context", context, get("context"), rtol, atol);
  check_close(where + "weights", weights, get("weights"), rtol, atol);
  backward({context, weights}, {get("R_context"), get("R_weights")});
  check_close(where + "grad.query", query.grad(), get("grad.query"), rtol, atol);
  check_close(where + "grad.encoder_states", states.grad(), get("grad.encoder_states"), rtol, atol);
  for (const auto& [name, p] : module.named_parameters())
    check_close(where + "grad." + name, p.grad(), get("grad." + name), rtol, atol);
}

}  // namespace

TEST_CASE("attention reference: additive attention agrees with PyTorch") {
  for (DType dtype : {Float64, Float32}) {
    Generator gen(0);
    nn::AdditiveAttention attn(3, 4, gen, 6);
    check_against_torch("attention_additive.safetensors", attn,
                        [&](const Tensor& q, const Tensor& h, const Tensor& m) { return attn.forward(q, h, m); }, dtype);
  }
}

TEST_CASE("attention reference: dot-product attention (scaled projected, plain, general) agrees with PyTorch") {
  struct Case {
    const char* file;
    std::int64_t query_size;
    nn::DotAttentionOptions options;
  };
  for (const Case& c : {Case{"attention_dot_scaled.safetensors", 3, {nn::DotScore::Projected, true, 6}},
                        Case{"attention_dot_plain.safetensors", 4, {nn::DotScore::Plain, false, 0}},
                        Case{"attention_dot_general.safetensors", 3, {nn::DotScore::General, false, 0}}}) {
    for (DType dtype : {Float64, Float32}) {
      Generator gen(0);
      nn::DotProductAttention attn(c.query_size, 4, gen, c.options);
      check_against_torch(c.file, attn,
                          [&](const Tensor& q, const Tensor& h, const Tensor& m) { return attn.forward(q, h, m); },
                          dtype);
    }
  }
}
