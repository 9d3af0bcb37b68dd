// layers/module and layers/dropout: dotted names of nested modules, counts,
// train()/eval() reaching sub-modules (and switching dropout), zero_grad, to(),
// state_dict/load_state_dict and its error listing.
#include <doctest/doctest.h>

#include "autograd/autograd.hpp"
#include "layers/layers.hpp"

using namespace attend;
using Values = std::vector<double>;

namespace {

struct Block : nn::Module {
  nn::Linear proj;
  nn::Dropout drop;
  explicit Block(Generator& gen) : proj(4, 3, gen), drop(0.5, 1) {
    register_module("proj", proj);
    register_module("drop", drop);
  }
  Tensor forward(const Tensor& x) { return drop.forward(proj.forward(x)); }
};

struct Net : nn::Module {
  Tensor scale;
  nn::Embedding emb;
  Block block;
  explicit Net(Generator& gen) : emb(10, 4, 0, gen), block(gen) {
    scale = ones({3});
    register_parameter("scale", scale);
    register_module("emb", emb);
    register_module("block", block);
  }
  Tensor forward(const Indices& tokens) { return mul(block.forward(emb.forward(tokens)), scale); }
};

std::vector<std::string> names_of(const nn::Module& m) {
  std::vector<std::string> out;
  for (const auto& [name, p] : m.named_parameters()) out.push_back(name);
  return out;
}

}  // namespace

TEST_CASE("Module: dotted names of nested modules, in registration order, and counts") {
  Generator gen(0);
  Net net(gen);
  CHECK(names_of(net) == std::vector<std::string>{"scale", "emb.weight", "block.proj.weight", "block.proj.bias"});
  CHECK(names_of(net.block) == std::vector<std::string>{"proj.weight", "proj.bias"});
  CHECK(net.num_parameters() == 3 + 10 * 4 + 3 * 4 + 3);
  CHECK(net.block.drop.num_parameters() == 0);
  auto params = net.parameters();
  REQUIRE(params.size() == 4);
  CHECK(params[1].same(net.emb.weight));  // the module's own tensors, not copies
  CHECK(params[3].same(net.block.proj.bias));
  for (const Tensor& p : params) CHECK(p.requires_grad());
}

TEST_CASE("Module: train() and eval() reach every sub-module and switch dropout") {
  Generator gen(1);
  Net net(gen);
  CHECK(net.is_training());
  CHECK(net.block.drop.is_training());
  Tensor x = ones({200});
  Tensor in_training = net.block.drop.forward(x);
  int dropped = 0;
  for (double v : in_training.to_vector()) {
    CHECK((v == 0.0 || v == 2.0));  // p = 0.5: survivors doubled
    dropped += v == 0.0;
  }
  CHECK(dropped > 60);  // about 100 of 200
  CHECK(dropped < 140);

  net.eval();
  CHECK(!net.is_training());
  CHECK(!net.emb.is_training());
  CHECK(!net.block.is_training());
  CHECK(!net.block.proj.is_training());
  CHECK(!net.block.drop.is_training());
  Tensor in_eval = net.block.drop.forward(x);
  CHECK(in_eval.same(x));  // evaluation: x itself

  net.block.train();  // a sub-tree alone
  CHECK(net.block.drop.is_training());
  CHECK(!net.is_training());
  net.train();
  CHECK(net.emb.is_training());
}

TEST_CASE("Dropout module: its own seeded generator, gradient, errors") {
  nn::Dropout a(0.3, 42), b(0.3, 42), c(0.3, 43);
  Tensor x = ones({64}, Float64).requires_grad_();
  Tensor ya = a.forward(x), yb = b.forward(x), yc = c.forward(x);
  CHECK(equal(ya, yb));    // same seed, same mask
  CHECK(!equal(ya, yc));   // another seed, another mask
  CHECK(!equal(a.forward(x), ya));  // the generator moves on
  CHECK(a.p() == 0.3);
  ya.backward(ones({64}, Float64));
  for (std::int64_t i = 0; i < 64; ++i) CHECK(x.grad().at({i}) == ya.at({i}));  // dx = dy * mask
  nn::Dropout none(0.0);
  CHECK(none.forward(x).same(x));
  CHECK_THROWS_WITH_AS(nn::Dropout(1.0), "Dropout: p must be in [0, 1), got 1", Error);
  CHECK_THROWS_WITH_AS(nn::Dropout(-0.1), "Dropout: p must be in [0, 1), got -0.1", Error);
}

TEST_CASE("Module: zero_grad drops the gradients of the whole tree") {
  Generator gen(2);
  Net net(gen);
  net.eval();
  Indices tokens({1, 2, 0}, Shape{3});
  net.forward(tokens).backward(ones({3, 3}));
  for (const Tensor& p : net.parameters()) CHECK(p.grad().defined());
  net.zero_grad();
  for (const Tensor& p : net.parameters()) CHECK(!p.grad().defined());
}

TEST_CASE("Module: to(Float64) converts every parameter, values kept") {
  Generator gen(3);
  Net net(gen);
  const Tensor w32 = net.block.proj.weight;
  net.to(Float64);
  for (const Tensor& p : net.parameters()) {
    CHECK(p.dtype() == Float64);
    CHECK(p.requires_grad());
    CHECK(p.is_leaf());
  }
  CHECK(equal(net.block.proj.weight, w32.to(Float64)));
  CHECK(net.forward(Indices({4})).dtype() == Float64);
}

TEST_CASE("Module: state_dict and load_state_dict") {
  Generator gen(4);
  Net a(gen), b(gen);
  CHECK(!equal(a.emb.weight, b.emb.weight));
  auto state = a.state_dict();
  CHECK(state.size() == 4);
  CHECK(state.at("block.proj.bias").same(a.block.proj.bias));
  const Tensor b_weight = b.emb.weight;
  b.load_state_dict(state);
  CHECK(equal(b.emb.weight, a.emb.weight));
  CHECK(b.emb.weight.same(b_weight));  // copied into the existing tensor
  CHECK(!b.emb.weight.same(a.emb.weight));

  // Other dtypes are converted.
  std::map<std::string, Tensor> f64;
  for (const auto& [name, t] : state) f64[name] = t.to(Float64).clone();
  f64["scale"].fill_(2);
  b.load_state_dict(f64);
  CHECK(b.scale.dtype() == Float32);
  CHECK(b.scale.to_vector() == Values{2, 2, 2});

  // Non-strict: missing and unexpected names are allowed, wrong shapes are not.
  auto partial = std::map<std::string, Tensor>{{"scale", full({3}, 5)}, {"extra", zeros({1})}};
  b.load_state_dict(partial, false);
  CHECK(b.scale.to_vector() == Values{5, 5, 5});
}

TEST_CASE("Module: load_state_dict lists every missing, unexpected and misshaped name") {
  Generator gen(5);
  Net net(gen);
  auto state = net.state_dict();
  state.erase("emb.weight");
  state.erase("scale");
  state["block.proj.weight"] = zeros({4, 3});
  state["block.out.bias"] = zeros({3});
  const Tensor before = net.block.proj.bias.clone();
  state["block.proj.bias"] = zeros({3});
  CHECK_THROWS_WITH_AS(net.load_state_dict(state),
                       "load_state_dict: the tensors do not match the module:\n"
                       "  missing: scale, emb.weight\n"
                       "  unexpected: block.out.bias\n"
                       "  wrong shape: block.proj.weight (expected [3, 4], got [4, 3])",
                       Error);
  CHECK(equal(net.block.proj.bias, before));  // nothing was copied
  CHECK_THROWS_WITH_AS(net.load_state_dict({{"block.proj.weight", zeros({4, 3})}}, false),
                       "load_state_dict: the tensors do not match the module:\n"
                       "  missing: scale, emb.weight, block.proj.bias\n"
                       "  wrong shape: block.proj.weight (expected [3, 4], got [4, 3])",
                       Error);
}
