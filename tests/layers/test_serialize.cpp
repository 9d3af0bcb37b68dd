// layers/serialize: modules and optimizer states to safetensors files and back,
// bit for bit; strict loading with every mismatch listed.
#include <doctest/doctest.h>

#include <filesystem>

#include <unistd.h>

#include "autograd/autograd.hpp"
#include "core/io/safetensors.hpp"
#include "layers/layers.hpp"
#include "tests/support/scratch.hpp"

using namespace attend;
namespace fs = std::filesystem;

namespace {

// A fresh directory per test case, removed afterwards.
struct TempDir : attend::testing::Scratch {
  TempDir() : Scratch("attend-test-serialize") {}
  std::string file(const std::string& name) const { return (dir / name).string(); }
};

struct Tagger : nn::Module {
  nn::Embedding emb;
  nn::Linear out;
  Tagger(Generator& gen, std::int64_t hidden = 4, DType dtype = Float32)
      : emb(7, hidden, 0, gen, dtype), out(hidden, 3, gen, dtype) {
    register_module("emb", emb);
    register_module("out", out);
  }
  Tensor forward(const Indices& tokens) { return out.forward(emb.forward(tokens)); }
};

}  // namespace

TEST_CASE("save/load: a module round trip is bit-exact, in float32 and float64") {
  TempDir tmp;
  for (DType dtype : {Float32, Float64}) {
    Generator gen(1), other(2);
    Tagger a(gen, 4, dtype), b(other, 4, dtype);
    const std::string path = tmp.file(fmt::format("tagger_{}.safetensors", dtype_name(dtype)));
    nn::save(a, path, {{"epoch", "3"}});
    CHECK(!equal(a.emb.weight, b.emb.weight));
    const Tensor b_weight = b.out.weight;
    nn::load(b, path);
    for (const auto& [name, p] : a.named_parameters()) {
      CAPTURE(name);
      CHECK(equal(p, b.state_dict().at(name)));
    }
    CHECK(b.out.weight.same(b_weight));  // loaded into the module's own tensors
    // the file itself: the names, the dtype and the metadata
    SafetensorsFile file = load_safetensors(path);
    CHECK(file.metadata.at("epoch") == "3");
    CHECK(file.tensors.size() == 3);
    CHECK(file.tensors.at("out.bias").dtype() == dtype);
    CHECK(file.tensors.count("emb.weight") == 1);
  }
}

TEST_CASE("load: strict names and shapes, the error lists every mismatch") {
  TempDir tmp;
  Generator gen(3);
  Tagger small(gen, 4);
  const std::string path = tmp.file("small.safetensors");
  nn::save(small, path);

  Tagger wide(gen, 5);
  const Tensor before = wide.out.bias.clone();
  const std::string wide_error = "load: " + path +
                                 ": load_state_dict: the tensors do not match the module:\n"
                                 "  wrong shape: emb.weight (expected [7, 5], got [7, 4]), "
                                 "out.weight (expected [3, 5], got [3, 4])";
  CHECK_THROWS_WITH_AS(nn::load(wide, path), wide_error.c_str(), Error);
  CHECK(equal(wide.out.bias, before));  // nothing loaded

  const std::string partial = tmp.file("partial.safetensors");
  save_safetensors(partial, {{"emb.weight", zeros({7, 4})}, {"out.extra", zeros({1})}});
  const std::string partial_error = "load: " + partial +
                                    ": load_state_dict: the tensors do not match the module:\n"
                                    "  missing: out.weight, out.bias\n"
                                    "  unexpected: out.extra";
  CHECK_THROWS_WITH_AS(nn::load(small, partial), partial_error.c_str(), Error);
  CHECK_THROWS_AS(nn::load(small, tmp.file("absent.safetensors")), Error);
}

TEST_CASE("save/load: optimizer state through a file continues bit for bit") {
  TempDir tmp;
  Generator gen(4);
  Tagger straight(gen), first(gen);
  first.load_state_dict(straight.state_dict());
  Tagger resumed(gen);
  Indices tokens({1, 0, 4, 4, 6, 2}, Shape{2, 3});
  Tensor r = normal({2, 3, 3}, 0, 1, gen);
  auto train = [&](Tagger& model, optim::Optimizer& opt, int steps) {
    for (int s = 0; s < steps; ++s) {
      opt.zero_grad();
      model.forward(tokens).backward(r);
      optim::clip_grad_norm(model.parameters(), 1.0);
      opt.step();
    }
  };
  optim::Adam opt_straight(straight.parameters(), {.lr = 0.05, .weight_decay = 0.01});
  train(straight, opt_straight, 5);

  optim::Adam opt_first(first.parameters(), {.lr = 0.05, .weight_decay = 0.01});
  train(first, opt_first, 3);
  const std::string model_path = tmp.file("model.safetensors"), opt_path = tmp.file("adam.safetensors");
  nn::save(first, model_path);
  nn::save(opt_first, opt_path, {{"note", "after 3 steps"}});
  CHECK(load_safetensors(opt_path).metadata.at("optimizer") == "Adam");

  nn::load(resumed, model_path);
  optim::Adam opt_resumed(resumed.parameters(), {.lr = 1.0});
  nn::load(opt_resumed, opt_path);
  CHECK(opt_resumed.lr() == 0.05);
  train(resumed, opt_resumed, 2);
  for (const auto& [name, p] : straight.named_parameters()) {
    CAPTURE(name);
    CHECK(equal(p, resumed.state_dict().at(name)));
  }

  optim::SGD sgd(resumed.parameters(), 0.1);
  CHECK_THROWS_WITH_AS(nn::load(sgd, opt_path),
                       ("load: " + opt_path + ": the file holds Adam state, but the optimizer is SGD").c_str(), Error);
  CHECK_THROWS_WITH_AS(
      nn::load(opt_resumed, model_path),
      ("load: " + model_path + ": no 'optimizer' metadata entry: not an optimizer state file").c_str(), Error);
  optim::Adam fewer({resumed.out.weight});
  CHECK_THROWS_WITH_AS(
      nn::load(fewer, opt_path),
      ("load: " + opt_path + ": Adam::load_state_dict: the state is for 3 parameters but the optimizer has 1").c_str(),
      Error);
  const std::string x_path = tmp.file("x.safetensors");
  CHECK_THROWS_WITH_AS(
      nn::save(sgd, x_path, {{"optimizer", "mine"}}),
      ("save: " + x_path + ": the metadata key 'optimizer' is reserved for the optimizer's type").c_str(),
      Error);
}
