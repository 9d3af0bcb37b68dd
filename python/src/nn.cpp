// attend.nn's layers (attend._attend.nn) and attend.optim's optimizers and
// schedules (attend._attend.optim): the C++ classes themselves, so that a loop
// written in Python runs the very code a C++ loop runs and gives the same bits.
// python/attend/nn.py adds the Python Module base that user models derive from.
#include <pybind11/stl.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "autograd/optim/lr_schedule.hpp"
#include "autograd/optim/optim.hpp"
#include "bindings.hpp"
#include "core/error.hpp"
#include "layers/attention/attention.hpp"
#include "layers/embedding.hpp"
#include "layers/linear.hpp"
#include "layers/lstm/lstm.hpp"
#include "models/data/corpus.hpp"
#include "models/seq2seq.hpp"

namespace attend_py {

namespace {

using attend::Generator;
using attend::Tensor;
namespace nn = attend::nn;
namespace optim = attend::optim;

// A layer's initial weights come from `seed`: an int (a new Generator) or an
// attend.Generator, which draws on (as one C++ Generator shared by several layers).
template <class F>
auto with_generator(const py::handle& seed, const char* op, F&& make) {
  if (py::isinstance<py::int_>(seed)) {
    Generator gen(seed.cast<std::uint64_t>());
    return make(gen);
  }
  try {
    return make(seed.cast<Generator&>());
  } catch (const py::cast_error&) {
    attend::fail("{}: seed must be an int or an attend.Generator, got {}", op,
                 py::str(py::type::of(seed).attr("__name__")).cast<std::string>());
  }
}

// Work this large runs without the GIL (bindings.hpp: run_released), as the ops do.
bool large(std::int64_t work) { return work >= kReleaseGilElements; }

std::int64_t elements(const std::vector<Tensor>& tensors) {
  std::int64_t n = 0;
  for (const Tensor& t : tensors) n += t.defined() ? t.numel() : 0;
  return n;
}

std::vector<std::int64_t> lengths_of(const py::handle& lengths) {
  if (lengths.is_none()) return {};
  return lengths.cast<std::vector<std::int64_t>>();
}

void bind_module(py::module_& nn_mod) {
  py::class_<nn::Module>(nn_mod, "CModule",
                         "The C++ base of every attend layer: parameters by dotted name, train()/eval(), zero_grad().")
      .def("named_parameters", &nn::Module::named_parameters,
           "[(name, Tensor)] of this module and its sub-modules, in registration order")
      .def("parameters", &nn::Module::parameters, "Every parameter tensor (shared with the module)")
      .def("num_parameters", &nn::Module::num_parameters, "Total number of parameter elements")
      .def("train", [](nn::Module& m, bool on) { m.train(on); }, py::arg("mode") = true,
           "Switches dropout on (or off with mode=False) in the whole tree")
      .def("eval", &nn::Module::eval, "train(False)")
      .def_property_readonly("training", &nn::Module::is_training)
      .def("zero_grad", &nn::Module::zero_grad, "Drops every parameter's gradient")
      .def("to", [](nn::Module& m, const py::handle& dtype) { m.to(to_dtype(dtype, attend::Float32, "Module.to")); },
           py::arg("dtype"), "Converts every parameter (new leaf tensors: collect parameters() again afterwards)")
      .def("state_dict", &nn::Module::state_dict, "{name: Tensor}, shared with the module (not copies)")
      .def("load_state_dict", &nn::Module::load_state_dict, py::arg("state"), py::arg("strict") = true,
           "Copies values in; with strict, every name must match both ways (the error lists every mismatch)");
}

void bind_layers(py::module_& nn_mod) {
  auto linear_forward = [](const nn::Linear& l, const Tensor& x) {
    return run_released(large(x.numel() * l.out_features()), [&] { return l.forward(x); });
  };
  py::class_<nn::Linear, nn::Module>(nn_mod, "Linear", "y = x @ W^T + b, PyTorch's layout and initialisation")
      .def(py::init([](std::int64_t in, std::int64_t out, bool bias, const py::handle& seed, const py::handle& dtype) {
             const attend::DType dt = to_dtype(dtype, attend::Float32, "Linear");
             return with_generator(seed, "Linear",
                                   [&](Generator& g) { return std::make_unique<nn::Linear>(in, out, bias, g, dt); });
           }),
           py::arg("in_features"), py::arg("out_features"), py::arg("bias") = true, py::arg("seed") = 0,
           py::arg("dtype") = py::none())
      .def("forward", linear_forward, py::arg("x"), "x (..., in) -> (..., out)")
      .def("__call__", linear_forward, py::arg("x"))
      .def_property_readonly("weight", [](const nn::Linear& l) { return l.weight; }, "(out, in)")
      .def_property_readonly("bias", [](const nn::Linear& l) { return l.bias; }, "(out), or an undefined tensor without bias")
      .def_property_readonly("in_features", &nn::Linear::in_features)
      .def_property_readonly("out_features", &nn::Linear::out_features);

  auto lookup = [](const nn::Embedding& e, const py::handle& ids) {
    return e.forward(to_indices(ids, "Embedding", "indices"));
  };
  py::class_<nn::Embedding, nn::Module>(nn_mod, "Embedding", "A table of vectors looked up by token id")
      .def(py::init([](std::int64_t num, std::int64_t dim, std::optional<std::int64_t> padding_idx,
                       const py::handle& seed, const py::handle& dtype) {
             const attend::DType dt = to_dtype(dtype, attend::Float32, "Embedding");
             return with_generator(seed, "Embedding", [&](Generator& g) {
               return std::make_unique<nn::Embedding>(num, dim, padding_idx, g, dt);
             });
           }),
           py::arg("num_embeddings"), py::arg("embedding_dim"), py::arg("padding_idx") = py::none(),
           py::arg("seed") = 0, py::arg("dtype") = py::none())
      .def("forward", lookup, py::arg("indices"), "indices (...) -> (..., dim)")
      .def("__call__", lookup, py::arg("indices"))
      .def_property_readonly("weight", [](const nn::Embedding& l) { return l.weight; }, "(num_embeddings, dim)")
      .def_property_readonly("num_embeddings", &nn::Embedding::num_embeddings)
      .def_property_readonly("embedding_dim", &nn::Embedding::embedding_dim)
      .def_property_readonly("padding_idx", &nn::Embedding::padding_idx);

  // (output, (h_n, c_n)), as torch.nn.LSTM returns.
  auto run_lstm = [](nn::LSTM& l, const Tensor& x, const py::handle& lengths, const py::handle& initial) {
    nn::LSTMState state;
    if (!initial.is_none()) {
      auto pair = initial.cast<std::pair<Tensor, Tensor>>();
      state = {pair.first, pair.second};
    }
    const std::vector<std::int64_t> lens = lengths_of(lengths);
    nn::LSTMOutput out =
        run_released(large(x.numel() * 4 * l.hidden_size()), [&] { return l.forward(x, lens, state); });
    return py::make_tuple(out.output, py::make_tuple(out.h_n, out.c_n));
  };
  py::class_<nn::LSTM, nn::Module>(nn_mod, "LSTM",
                                   "torch.nn.LSTM(batch_first=True): layers, directions, padding by lengths")
      .def(py::init([](std::int64_t input, std::int64_t hidden, std::int64_t num_layers, bool bidirectional,
                       double dropout, bool forget_bias_one, const py::handle& seed, const py::handle& dtype) {
             nn::LSTMOptions o;
             o.num_layers = num_layers;
             o.bidirectional = bidirectional;
             o.dropout = dropout;
             o.forget_bias_one = forget_bias_one;
             o.dtype = to_dtype(dtype, attend::Float32, "LSTM");
             return with_generator(seed, "LSTM",
                                   [&](Generator& g) { return std::make_unique<nn::LSTM>(input, hidden, g, o); });
           }),
           py::arg("input_size"), py::arg("hidden_size"), py::arg("num_layers") = 1, py::arg("bidirectional") = false,
           py::arg("dropout") = 0.0, py::arg("forget_bias_one") = false, py::arg("seed") = 0,
           py::arg("dtype") = py::none())
      .def("forward", run_lstm, py::arg("x"), py::arg("lengths") = py::none(), py::arg("initial") = py::none(),
           "x (B, T, I); lengths: B values in [1, T] or None; initial: (h0, c0) each (L*D, B, H) or None.\n"
           "Returns (output (B, T, D*H), (h_n, c_n) each (L*D, B, H)).")
      .def("__call__", run_lstm, py::arg("x"), py::arg("lengths") = py::none(), py::arg("initial") = py::none())
      .def_property_readonly("input_size", &nn::LSTM::input_size)
      .def_property_readonly("hidden_size", &nn::LSTM::hidden_size)
      .def_property_readonly("num_layers", &nn::LSTM::num_layers)
      .def_property_readonly("num_directions", &nn::LSTM::num_directions);
}

// (context, weights), as the C++ AttentionOutput.
template <class A>
py::tuple attend_once(const A& a, const Tensor& query, const Tensor& states, const Tensor& mask) {
  nn::AttentionOutput out = a.forward(query, states, mask);
  return py::make_tuple(out.context, out.weights);
}

void bind_attention(py::module_& nn_mod) {
  const char* forward_doc = "query (B, Hq), encoder_states (B, S, Hk), mask (B, S) of 1 (real) and 0 (padding)\n"
                            "-> (context (B, Hk), weights (B, S))";
  py::class_<nn::AdditiveAttention, nn::Module>(nn_mod, "AdditiveAttention",
                                                "Bahdanau's e_j = v^T tanh(W_k h_j + W_q s + b)")
      .def(py::init([](std::int64_t query_size, std::int64_t key_size, std::int64_t attention_size,
                       const py::handle& seed, const py::handle& dtype) {
             const attend::DType dt = to_dtype(dtype, attend::Float32, "AdditiveAttention");
             return with_generator(seed, "AdditiveAttention", [&](Generator& g) {
               return std::make_unique<nn::AdditiveAttention>(query_size, key_size, g, attention_size, dt);
             });
           }),
           py::arg("query_size"), py::arg("key_size"), py::arg("attention_size") = 0, py::arg("seed") = 0,
           py::arg("dtype") = py::none())
      .def("forward", &attend_once<nn::AdditiveAttention>, py::arg("query"), py::arg("encoder_states"),
           py::arg("mask"), forward_doc)
      .def("__call__", &attend_once<nn::AdditiveAttention>, py::arg("query"), py::arg("encoder_states"),
           py::arg("mask"))
      .def_property_readonly("W_k", [](const nn::AdditiveAttention& l) { return l.W_k; })
      .def_property_readonly("W_q", [](const nn::AdditiveAttention& l) { return l.W_q; })
      .def_property_readonly("b", [](const nn::AdditiveAttention& l) { return l.b; })
      .def_property_readonly("v", [](const nn::AdditiveAttention& l) { return l.v; });

  py::class_<nn::DotProductAttention, nn::Module>(
      nn_mod, "DotAttention",
      "Dot-product attention: score 'projected' (W_K h_j).(W_Q s), 'general' s^T W h_j or 'plain' h_j.s,\n"
      "divided by sqrt(d) when scaled")
      .def(py::init([](std::int64_t query_size, std::int64_t key_size, const std::string& score, bool scaled,
                       std::int64_t attention_size, const py::handle& seed, const py::handle& dtype) {
             nn::DotAttentionOptions o;
             if (score == "projected") o.score = nn::DotScore::Projected;
             else if (score == "general") o.score = nn::DotScore::General;
             else if (score == "plain") o.score = nn::DotScore::Plain;
             else attend::fail("DotAttention: score must be 'projected', 'general' or 'plain', got '{}'", score);
             o.scaled = scaled;
             o.attention_size = attention_size;
             const attend::DType dt = to_dtype(dtype, attend::Float32, "DotAttention");
             return with_generator(seed, "DotAttention", [&](Generator& g) {
               return std::make_unique<nn::DotProductAttention>(query_size, key_size, g, o, dt);
             });
           }),
           py::arg("query_size"), py::arg("key_size"), py::arg("score") = "projected", py::arg("scaled") = true,
           py::arg("attention_size") = 0, py::arg("seed") = 0, py::arg("dtype") = py::none())
      .def("forward", &attend_once<nn::DotProductAttention>, py::arg("query"), py::arg("encoder_states"),
           py::arg("mask"), forward_doc)
      .def("__call__", &attend_once<nn::DotProductAttention>, py::arg("query"), py::arg("encoder_states"),
           py::arg("mask"))
      .def_property_readonly("W", [](const nn::DotProductAttention& l) { return l.W; })
      .def_property_readonly("W_Q", [](const nn::DotProductAttention& l) { return l.W_Q; })
      .def_property_readonly("W_K", [](const nn::DotProductAttention& l) { return l.W_K; })
      .def_property_readonly("scale", &nn::DotProductAttention::scale);
}

// A batch of token-id sequences, as training makes it (models/data/corpus.hpp).
attend::Batch batch_of(const std::vector<std::vector<std::int64_t>>& source,
                       const std::vector<std::vector<std::int64_t>>& target, attend::DType dtype) {
  if (source.size() != target.size())
    attend::fail("Seq2Seq.loss: {} source sequences but {} targets", source.size(), target.size());
  std::vector<attend::EncodedPair> pairs;
  std::vector<std::int64_t> ids;
  for (std::size_t i = 0; i < source.size(); ++i) {
    pairs.push_back({source[i], target[i]});
    ids.push_back(static_cast<std::int64_t>(i));
  }
  return attend::make_batch(pairs, ids, {.mask_dtype = dtype});
}

void bind_seq2seq(py::module_& nn_mod) {
  py::class_<attend::Seq2Seq, nn::Module>(
      nn_mod, "Seq2Seq",
      "The encoder-decoder with attention that attend train trains (models/seq2seq.hpp).\n"
      "Token ids: 0 <pad>, 1 <unk>, 2 <s>, 3 </s>, then the vocabulary's words.")
      .def(py::init([](std::int64_t source_vocab, std::int64_t target_vocab, std::int64_t embed, std::int64_t hidden,
                       std::int64_t layers, bool bidirectional, double dropout, const std::string& attention,
                       const py::handle& seed, const py::handle& dtype) {
             attend::Seq2SeqConfig c;
             c.source_vocab = source_vocab;
             c.target_vocab = target_vocab;
             c.embed = embed;
             c.hidden = hidden;
             c.layers = layers;
             c.bidirectional = bidirectional;
             c.dropout = dropout;
             c.attention = attend::parse_attention(attention);
             c.validate();
             const attend::DType dt = to_dtype(dtype, attend::Float32, "Seq2Seq");
             return with_generator(seed, "Seq2Seq",
                                   [&](Generator& g) { return std::make_unique<attend::Seq2Seq>(c, g, dt); });
           }),
           py::arg("source_vocab"), py::arg("target_vocab"), py::arg("embed") = 64, py::arg("hidden") = 128,
           py::arg("layers") = 1, py::arg("bidirectional") = true, py::arg("dropout") = 0.0,
           py::arg("attention") = "additive", py::arg("seed") = 0, py::arg("dtype") = py::none())
      .def(
          "loss",
          [](attend::Seq2Seq& m, const std::vector<std::vector<std::int64_t>>& source,
             const std::vector<std::vector<std::int64_t>>& target, double label_smoothing, double teacher_forcing,
             Generator* sampling) {
            const attend::Batch batch = batch_of(source, target, m.dtype());
            return run_released(true, [&] {
              return m.loss(batch, {.label_smoothing = label_smoothing, .teacher_forcing = teacher_forcing}, sampling);
            });
          },
          py::arg("source"), py::arg("target"), py::arg("label_smoothing") = 0.0, py::arg("teacher_forcing") = 1.0,
          py::arg("sampling") = py::none(),
          "Mean cross-entropy of a batch: source and target are lists of token-id lists (without <s> and </s>,\n"
          "which the batch adds). teacher_forcing < 1 feeds the model's own prediction at some steps, chosen by\n"
          "the attend.Generator `sampling`.")
      .def_property_readonly("config", [](const attend::Seq2Seq& m) {
        return py::module_::import("json").attr("loads")(m.config().to_json().dump());
      });
}

void bind_optimizers(py::module_& optim_mod) {
  using Params = std::vector<Tensor>;
  py::class_<optim::Optimizer>(optim_mod, "Optimizer",
                               "Updates the parameters it was given in place, with PyTorch's rules")
      .def("zero_grad", &optim::Optimizer::zero_grad, "Drops every parameter's gradient (set_to_none)")
      .def("step", [](optim::Optimizer& o) { run_released(large(elements(o.params())), [&] { o.step(); }); },
           "One update of every parameter that has a gradient")
      .def_property("lr", &optim::Optimizer::lr, &optim::Optimizer::set_lr)
      .def_property_readonly("name", &optim::Optimizer::name)
      .def_property_readonly("params", &optim::Optimizer::params)
      .def("hyperparameters", &optim::Optimizer::hyperparameters)
      .def("state_dict", &optim::Optimizer::state_dict, "Copies of the state: {name: Tensor}")
      .def("load_state_dict", &optim::Optimizer::load_state_dict, py::arg("state"),
           "All or nothing: a state that does not fit raises attend.Error listing every mismatch");
  py::class_<optim::SGD, optim::Optimizer>(optim_mod, "SGD")
      .def(py::init([](Params params, double lr, double momentum, double dampening, double weight_decay,
                       bool nesterov) {
             return std::make_unique<optim::SGD>(std::move(params), lr,
                                                 optim::SGDOptions{momentum, dampening, weight_decay, nesterov});
           }),
           py::arg("params"), py::arg("lr"), py::arg("momentum") = 0.0, py::arg("dampening") = 0.0,
           py::arg("weight_decay") = 0.0, py::arg("nesterov") = false);
  py::class_<optim::Adam, optim::Optimizer>(optim_mod, "Adam")
      .def(py::init([](Params params, double lr, std::pair<double, double> betas, double eps, double weight_decay) {
             return std::make_unique<optim::Adam>(
                 std::move(params), optim::AdamOptions{lr, betas.first, betas.second, eps, weight_decay});
           }),
           py::arg("params"), py::arg("lr") = 1e-3, py::arg("betas") = std::make_pair(0.9, 0.999),
           py::arg("eps") = 1e-8, py::arg("weight_decay") = 0.0);
  py::class_<optim::Adadelta, optim::Optimizer>(optim_mod, "Adadelta")
      .def(py::init([](Params params, double lr, double rho, double eps, double weight_decay) {
             return std::make_unique<optim::Adadelta>(std::move(params),
                                                      optim::AdadeltaOptions{lr, rho, eps, weight_decay});
           }),
           py::arg("params"), py::arg("lr") = 1.0, py::arg("rho") = 0.9, py::arg("eps") = 1e-6,
           py::arg("weight_decay") = 0.0);
  optim_mod.def("clip_grad_norm",
                [](const Params& params, double max_norm) {
                  return run_released(large(elements(params)), [&] { return optim::clip_grad_norm(params, max_norm); });
                },
                py::arg("params"), py::arg("max_norm"),
                "Scales every gradient so that their joint L2 norm is at most max_norm; returns the norm before");

  // A schedule keeps a reference to its optimizer: keep_alive holds the optimizer while it lives.
  py::class_<optim::StepLR>(optim_mod, "StepLR", "lr *= gamma every step_size epochs (call step() once per epoch)")
      .def(py::init<optim::Optimizer&, std::int64_t, double>(), py::arg("optimizer"), py::arg("step_size"),
           py::arg("gamma") = 0.1, py::keep_alive<1, 2>())
      .def("step", &optim::StepLR::step)
      .def_property_readonly("last_epoch", &optim::StepLR::last_epoch)
      .def_property_readonly("last_lr", &optim::StepLR::last_lr)
      .def("state_dict", &optim::StepLR::state_dict)
      .def("load_state_dict", &optim::StepLR::load_state_dict, py::arg("state"));
  py::class_<optim::ReduceLROnPlateau>(optim_mod, "ReduceLROnPlateau",
                                       "lr = max(lr * factor, min_lr) after more than patience epochs without improvement")
      .def(py::init([](optim::Optimizer& opt, double factor, std::int64_t patience, double threshold,
                       std::int64_t cooldown, double min_lr, double eps) {
             return std::make_unique<optim::ReduceLROnPlateau>(
                 opt, optim::PlateauOptions{factor, patience, threshold, cooldown, min_lr, eps});
           }),
           py::arg("optimizer"), py::arg("factor") = 0.1, py::arg("patience") = 10, py::arg("threshold") = 1e-4,
           py::arg("cooldown") = 0, py::arg("min_lr") = 0.0, py::arg("eps") = 1e-8, py::keep_alive<1, 2>())
      .def("step", &optim::ReduceLROnPlateau::step, py::arg("metric"), "Returns True when it lowered the lr")
      .def_property_readonly("best", &optim::ReduceLROnPlateau::best)
      .def_property_readonly("num_bad_epochs", &optim::ReduceLROnPlateau::num_bad_epochs)
      .def_property_readonly("last_lr", &optim::ReduceLROnPlateau::last_lr)
      .def("state_dict", &optim::ReduceLROnPlateau::state_dict)
      .def("load_state_dict", &optim::ReduceLROnPlateau::load_state_dict, py::arg("state"));
}

}  // namespace

void bind_nn(py::module_& m) {
  py::module_ nn_mod = m.def_submodule("_nn", "Layers and models (python/attend/nn.py re-exports them)");
  bind_module(nn_mod);
  bind_layers(nn_mod);
  bind_attention(nn_mod);
  bind_seq2seq(nn_mod);
  py::module_ optim_mod = m.def_submodule("_optim", "Optimizers and learning-rate schedules (attend.optim)");
  bind_optimizers(optim_mod);
}

}  // namespace attend_py
