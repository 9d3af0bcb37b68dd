// The training loops of python/tests/test_nn_parity.py, written in C++: each
// prints its losses and a checksum of its final weights with 17 significant
// digits, and the test requires the Python loop to print exactly the same.
//   python_nn_parity tagger    Embedding -> LSTM -> Linear, cross_entropy, Adam + clip + StepLR
//   python_nn_parity seq2seq   Seq2Seq(attention) loss, SGD with momentum + ReduceLROnPlateau
#include <cstdio>
#include <string>
#include <vector>

#include "autograd/ops.hpp"
#include "autograd/optim/lr_schedule.hpp"
#include "autograd/optim/optim.hpp"
#include "layers/embedding.hpp"
#include "layers/linear.hpp"
#include "layers/lstm/lstm.hpp"
#include "models/data/corpus.hpp"
#include "models/seq2seq.hpp"

namespace {

using namespace attend;

// The sum of every parameter, accumulated in double in named order.
double checksum(const nn::Module& m) {
  double sum = 0;
  for (const auto& [name, p] : m.named_parameters()) {
    Tensor d = p.detach().to(Float64);
    for (std::int64_t i = 0; i < d.numel(); ++i) sum += d.data<double>()[i];
  }
  return sum;
}

struct Tagger : nn::Module {
  explicit Tagger(Generator& gen) : embed(10, 6, gen), lstm(6, 8, gen), out(8, 5, gen) {
    register_module("embed", embed);
    register_module("lstm", lstm);
    register_module("out", out);
  }
  nn::Embedding embed;
  nn::LSTM lstm;
  nn::Linear out;
};

void tagger() {
  Generator gen(7);
  Tagger model(gen);
  optim::Adam opt(model.parameters(), {.lr = 0.02});
  optim::StepLR schedule(opt, 2, 0.5);
  const Indices ids({1, 4, 2, 9, 3, 0, 5, 7, 8, 6, 2, 1}, {2, 6});
  const Indices tags({0, 3, 1, 4, 2, 0, 2, 1, 3, 3, 0, 4});
  for (int step = 0; step < 6; ++step) {
    opt.zero_grad();
    const Tensor h = model.lstm.forward(model.embed.forward(ids)).output;  // (2, 6, 8)
    const Tensor logits = reshape(model.out.forward(h), {12, 5});
    const Tensor loss = cross_entropy(logits, tags);
    loss.backward();
    optim::clip_grad_norm(model.parameters(), 1.0);
    opt.step();
    schedule.step();
    std::printf("tagger %d %.17g %.17g\n", step, loss.item(), opt.lr());
  }
  std::printf("tagger checksum %.17g\n", checksum(model));
}

void seq2seq() {
  Seq2SeqConfig c;
  c.source_vocab = 9;
  c.target_vocab = 8;
  c.embed = 6;
  c.hidden = 7;
  c.attention = AttentionKind::Additive;
  Generator gen(3);
  Seq2Seq model(c, gen);
  optim::SGD opt(model.parameters(), 0.5, {.momentum = 0.9});
  optim::ReduceLROnPlateau plateau(opt, {.factor = 0.5, .patience = 0});
  const std::vector<EncodedPair> pairs = {{{4, 5, 6}, {4, 5}}, {{7, 8}, {6, 7, 4}}};
  const std::vector<std::int64_t> ids = {0, 1};
  const Batch batch = make_batch(pairs, ids);
  for (int step = 0; step < 5; ++step) {
    opt.zero_grad();
    const Tensor loss = model.loss(batch);
    loss.backward();
    opt.step();
    plateau.step(loss.item());
    std::printf("seq2seq %d %.17g %.17g\n", step, loss.item(), opt.lr());
  }
  std::printf("seq2seq checksum %.17g\n", checksum(model));
}

}  // namespace

int main(int argc, char** argv) {
  const std::string which = argc > 1 ? argv[1] : "";
  if (which == "tagger") tagger();
  else if (which == "seq2seq") seq2seq();
  else {
    std::fprintf(stderr, "usage: python_nn_parity tagger|seq2seq\n");
    return 2;
  }
  return 0;
}
