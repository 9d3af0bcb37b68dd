// gradcheck's per-node mode (each recorded op checked on its own, the first
// wrong one named), the directional mode, module parameter names, and the
// catalogue behind `attend gradcheck`.
//
// Letters: B batch, S source length, E embedding size, H hidden size, A
// attention size, V vocabulary.
#include <doctest/doctest.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <numeric>
#include <set>

#include "autograd/custom_op.hpp"
#include "autograd/gradcheck/gradcheck.hpp"
#include "autograd/ops.hpp"
#include "layers/attention/attention.hpp"
#include "layers/embedding.hpp"
#include "layers/gradcheck_module.hpp"
#include "layers/linear.hpp"
#include "layers/lstm/lstm_cell.hpp"
#include "models/seq2seq.hpp"
#include "tools/cli/commands.hpp"
#include "tests/autograd/recorded_ops.hpp"
#include "tools/gradcheck/op_cases.hpp"

using namespace attend;

namespace {

Tensor randn(const Shape& shape, std::uint64_t seed, double stddev = 0.5) {
  Generator gen(seed);
  return normal(shape, 0.0, stddev, gen, Float64).requires_grad_();
}

// y = tanh(x) with the textbook slip dx += dy * (1 - t) for (1 - t²) when wrong.
CustomOp our_tanh(bool wrong) {
  return {.name = wrong ? "wrong_tanh" : "our_tanh",
          .input_names = {"x"},
          .forward =
              [](OpContext& ctx, const Tensors& in) {
                Tensor t = tanh(in[0]);
                ctx.save({t});
                return Tensors{t};
              },
          .backward =
              [wrong](const OpContext& ctx, Grads& g) {
                const Tensor& t = ctx.saved(0);
                g.dx(0).add_(g.dy() * (wrong ? 1.0 - t : 1.0 - t * t));
              }};
}

// One decoder step of an attention Seq2Seq, from the library's ops, with our
// tanh in the attentional layer:
//   x = embedding(ids); (s, c) = lstm_cell(x, s0, c0); q = W_q s + b;
//   (ctx, alpha) = additive_attention_step(q, W_k h, h, v, mask);
//   h~ = tanh(W_c [s; ctx] + b_c);  loss = linear_cross_entropy(h~, W_out, b_out, targets)
struct Step {
  static constexpr std::int64_t B = 3, S = 4, E = 3, H = 4, A = 4, V = 6;
  Indices ids{{1, 5, 2}};
  Indices targets{{3, 0, -100}};
  Tensor mask = tensor({1, 1, 1, 1, /**/ 1, 1, 0, 0, /**/ 1, 0, 0, 0}, {B, S}, Float64);
  Tensors inputs = {
      randn({V, E}, 1),      randn({B, S, H}, 2), randn({B, H}, 3),  randn({B, H}, 4),  // table, h_j, s0, c0
      randn({4 * H, E}, 5),  randn({4 * H, H}, 6), randn({4 * H}, 7), randn({4 * H}, 8),  // LSTM
      randn({A, H}, 9),      randn({A, H}, 10),    randn({A}, 11),    randn({A}, 12),     // W_k, W_q, b, v
      randn({H, 2 * H}, 13), randn({H}, 14),       randn({V, H}, 15), randn({V}, 16)};    // W_c, b_c, W_out, b_out
  std::vector<std::string> names = {"table", "h",   "s0",  "c0",  "W_ih",  "W_hh",  "b_ih",  "b_hh",
                                    "W_k",   "W_q", "b",   "v",   "W_c",   "b_c",   "W_out", "b_out"};

  Tensor loss(const Tensors& in, const CustomOp& tanh_op) const {
    Tensor x = nn::embedding(in[0], ids);                                                  // (B, E)
    nn::LSTMState s = nn::lstm_cell(x, {in[2], in[3]}, {in[4], in[5], in[6], in[7]});     // (B, H)
    Tensor keys = linear(in[1], in[8]);                                                    // (B, S, A)
    Tensor q = linear(s.h, in[9], in[10]);                                                 // (B, A)
    nn::AttentionOutput att = nn::additive_attention_step(q, keys, in[1], in[11], mask);  // (B, H), (B, S)
    Tensor h_tilde = tanh_op({linear(concat({s.h, att.context}, 1), in[12], in[13])})[0];  // (B, H)
    return linear_cross_entropy(h_tilde, in[14], in[15], targets);
  }
};

// A float64 batch of all the pairs.
Batch float64_batch(const std::vector<EncodedPair>& pairs) {
  std::vector<std::int64_t> ids(pairs.size());
  std::iota(ids.begin(), ids.end(), 0);
  BatchOptions options;
  options.mask_dtype = Float64;
  return make_batch(pairs, ids, options);
}

}  // namespace

TEST_CASE("per-node mode names the wrong op inside a Seq2Seq step, with its input and element") {
  Step step;
  CustomOp right = our_tanh(false), wrong = our_tanh(true);
  GradcheckOptions o;
  o.names = step.names;
  GradcheckReport good = gradcheck([&](const Tensors& in) { return step.loss(in, right); }, step.inputs, o);
  INFO(good.str());
  CHECK(good.passed);
  CHECK(good.nodes.empty());  // per-node mode runs only when something is wrong

  GradcheckReport r = gradcheck([&](const Tensors& in) { return step.loss(in, wrong); }, step.inputs, o);
  INFO(r.str());
  CHECK_FALSE(r.passed);
  REQUIRE(r.first_wrong_node() != nullptr);
  CHECK(r.first_wrong_node()->op == "wrong_tanh");
  const std::string summary = r.first_wrong_node_summary();
  CHECK(summary.rfind("wrong_tanh: dL/dx wrong at [", 0) == 0);
  CHECK(r.str().find("first wrong op: wrong_tanh: dL/dx wrong at [") != std::string::npos);
  // Every op was re-run and checked; the library's ones all passed.
  std::vector<std::string> ops;
  for (const NodeReport& n : r.nodes) {
    CAPTURE(n.op);
    CHECK(n.checked);
    CHECK(n.passed == (n.op != "wrong_tanh"));
    ops.push_back(n.op);
  }
  for (const char* op : {"embedding", "lstm_cell", "linear", "additive_attention_step", "concat",
                         "linear_cross_entropy"})
    CHECK(std::find(ops.begin(), ops.end(), op) != ops.end());
  // The wrong op's own inputs are named in the report.
  const InputReport& dx = r.first_wrong_node()->inputs.at(0);
  CHECK(dx.name == "x");
  CHECK(dx.shape == Shape{Step::B, Step::H});
}

TEST_CASE("directional mode checks a step in a few passes, and still names the element of the wrong op") {
  Step step;
  CustomOp right = our_tanh(false), wrong = our_tanh(true);
  GradcheckOptions o;
  o.names = step.names;
  o.directions = 3;
  GradcheckReport good = gradcheck([&](const Tensors& in) { return step.loss(in, right); }, step.inputs, o);
  INFO(good.str());
  CHECK(good.passed);
  CHECK(good.mode == "3 random directions per input");
  for (const InputReport& in : good.inputs) CHECK(in.checked == 3);

  GradcheckReport r = gradcheck([&](const Tensors& in) { return step.loss(in, wrong); }, step.inputs, o);
  INFO(r.str());
  CHECK_FALSE(r.passed);
  // The parameters upstream of the wrong tanh are off along every direction...
  for (const InputReport& in : r.inputs)
    if (in.name == "W_c" || in.name == "b_c") CHECK_FALSE(in.passed);
  // ...while the output layer, downstream of it, is right.
  for (const InputReport& in : r.inputs)
    if (in.name == "W_out" || in.name == "b_out") CHECK(in.passed);
  CHECK(r.first_wrong_node_summary().rfind("wrong_tanh: dL/dx wrong at [", 0) == 0);
}

TEST_CASE("gradcheck_nodes checks every op of a whole Seq2Seq loss on its own, dropout included") {
  for (AttentionKind kind : {AttentionKind::Additive, AttentionKind::Dot, AttentionKind::General, AttentionKind::None}) {
    CAPTURE(attention_name(kind));
    Seq2SeqConfig c;
    c.source_vocab = 7;
    c.target_vocab = 7;
    c.embed = 3;
    c.hidden = 3;
    c.bidirectional = true;
    c.dropout = 0.3;  // each dropout node is re-run with its own mask
    c.attention = kind;
    Generator init(3);
    Seq2Seq model(c, init, Float64);
    Batch batch = float64_batch({{{4, 5, 6}, {5, 4}}, {{6}, {4, 6, 5}}, {{5, 6}, {6}}});
    LossOptions lo;
    lo.label_smoothing = 0.1;
    GradcheckReport r = gradcheck_nodes([&](const Tensors&) { return model.loss(batch, lo); }, model.parameters());
    INFO(r.str());
    CHECK(r.passed);
    std::set<std::string> ops;
    for (const NodeReport& n : r.nodes) {
      CAPTURE(n.op);
      CHECK(n.checked);
      ops.insert(n.op);
    }
    CHECK(ops.count("lstm_sequence") == 1);
    CHECK(ops.count("dropout") == 1);
    CHECK(ops.count("linear_cross_entropy") == 1);
    if (kind == AttentionKind::Additive) CHECK(ops.count("additive_attention_step") == 1);
    if (kind == AttentionKind::Dot || kind == AttentionKind::General) CHECK(ops.count("dot_attention_step") == 1);
  }
}

TEST_CASE("gradcheck over a module's parameters names them") {
  struct Net : nn::Module {
    nn::Linear proj;
    explicit Net(Generator& gen) : proj(3, 2, gen, Float64) { register_module("proj", proj); }
  };
  Generator gen(5);
  Net net(gen);
  Tensor x = randn({4, 3}, 17);
  CustomOp right = our_tanh(false), wrong = our_tanh(true);
  GradcheckReport good = nn::gradcheck_parameters(net, [&] { return right({net.proj.forward(x)}); });
  CHECK(good.passed);
  REQUIRE(good.inputs.size() == 2);
  CHECK(good.inputs[0].name == "proj.weight");
  CHECK(good.inputs[1].name == "proj.bias");
  GradcheckReport r = nn::gradcheck_parameters(net, [&] { return wrong({net.proj.forward(x)}); });
  CHECK_FALSE(r.passed);
  const std::string s = r.str();
  CHECK(s.find("proj.weight [2, 3]: ") != std::string::npos);
  CHECK(s.find("worst: proj.weight[") != std::string::npos);
  net.to(Float32);
  CHECK_THROWS_WITH_AS(nn::gradcheck_parameters(net, [&] { return Tensors{net.proj.forward(x.to(Float32))}; }),
                       "gradcheck_parameters: parameter 'proj.weight' is float32; convert the module with "
                       ".to(attend::Float64) first",
                       Error);
}

TEST_CASE("a replay that records another op is caught") {
  // A library op re-run must record the same op: here a hand-made node whose
  // replay calls mul instead of itself.
  Tensor x = randn({3}, 18);
  auto fn = [](const Tensors& in) {
    Tensor y = in[0] * 2.0;
    Tensor z = y.detach().clone();
    record("doubler", {in[0]}, {&z}, [](Grads& g) { g.dx(0).add_(g.dy(), 2.0); })
        .replay({"x"}, [](const Tensors& in2) { return Tensors{in2[0] * 2.0}; });
    return z;
  };
  GradcheckReport r = gradcheck_nodes(fn, {x});
  REQUIRE(r.nodes.size() == 1);
  CHECK_FALSE(r.nodes[0].passed);
  CHECK(r.nodes[0].note == "its replay records 'mul_scalar', not 'doubler'");
}

TEST_CASE("attend gradcheck covers every op the library records") {
  const std::vector<std::string> names = tools::op_names();
  const std::set<std::string> covered(names.begin(), names.end());
  const std::set<std::string> recorded = test::recorded_op_names();
  for (const char* sure : {"add", "sum", "concat", "lstm_sequence", "additive_attention_step", "linear_cross_entropy"})
    CHECK(recorded.count(sure) == 1);  // the scan itself works
  for (const std::string& op : recorded) {
    // Ops that only check arguments under this name (helpers of other ops) record nothing.
    CAPTURE(op);
    CHECK(covered.count(op) == 1);
  }
  // And the op names a real graph records are all among them.
  Step step;
  CustomOp right = our_tanh(false);
  GradcheckReport r = gradcheck_nodes([&](const Tensors& in) { return step.loss(in, right); }, step.inputs);
  for (const NodeReport& n : r.nodes)
    if (n.op != "our_tanh") CHECK(covered.count(n.op) == 1);
  // Every case passes.
  for (const tools::OpCase& c : tools::op_cases()) {
    CAPTURE(c.op);
    CAPTURE(c.name);
    GradcheckReport cr = c.run();
    INFO(cr.str());
    CHECK(cr.passed);
    CHECK(cr.accumulation_checked > 0);  // every op re-run with seeded slots, and adding into them
    CHECK(cr.accumulation_unchecked == 0);
  }
}

TEST_CASE("attend gradcheck: --op that matches nothing is an error listing the ops") {
  CLI::App app;
  tools::add_gradcheck_command(app);
  const char* argv[] = {"attend", "gradcheck", "--op", "no_such_op"};
  try {
    app.parse(4, const_cast<char**>(argv));
    FAIL("no error");
  } catch (const Error& e) {
    const std::string msg = e.what();
    CHECK(msg.rfind("gradcheck: no op matches --op 'no_such_op'; the ops are: add, sub,", 0) == 0);
    CHECK(msg.find("lstm_sequence") != std::string::npos);
  }
}

TEST_CASE("directional mode checks a whole Seq2Seq model, naming its parameters") {
  Seq2SeqConfig c;
  c.source_vocab = 30;
  c.target_vocab = 30;
  c.embed = 16;
  c.hidden = 24;
  c.bidirectional = true;
  c.attention = AttentionKind::Additive;
  Generator init(7);
  Seq2Seq model(c, init, Float64);
  std::vector<EncodedPair> pairs;
  Generator data(8);
  for (int i = 0; i < 6; ++i) {
    EncodedPair p;
    for (int j = 0; j <= i + 2; ++j) p.source.push_back(4 + static_cast<std::int64_t>(data.next_u64() % 26));
    for (int j = 0; j <= (i * 5) % 7 + 1; ++j) p.target.push_back(4 + static_cast<std::int64_t>(data.next_u64() % 26));
    pairs.push_back(p);
  }
  Batch batch = float64_batch(pairs);
  GradcheckOptions o;
  o.directions = 2;
  GradcheckReport r = nn::gradcheck_parameters(model, [&] { return Tensors{model.loss(batch)}; }, o);
  INFO(r.str());
  CHECK(r.passed);
  CHECK(r.accumulation_checked > 10);  // every op of the model, each adding into its inputs' slots
  CHECK(r.accumulation_unchecked == 0);
  const auto named = model.named_parameters();
  REQUIRE(r.inputs.size() == named.size());
  for (std::size_t i = 0; i < named.size(); ++i) {
    CHECK(r.inputs[i].name == named[i].first);
    CHECK(r.inputs[i].checked == 2);
  }
}
