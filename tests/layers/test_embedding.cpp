// layers/embedding: initialisation, hand-computed lookups and gradients, the
// padding row (no gradient ever), index_select as the oracle, float64
// gradchecks of the table, and every error message.
#include <doctest/doctest.h>

#include "autograd/autograd.hpp"
#include "autograd/optim/optim.hpp"
#include "layers/embedding.hpp"

using namespace attend;
using Values = std::vector<double>;

TEST_CASE("Embedding: normal(0, 1) initialisation with the padding row zeroed") {
  Generator gen(4);
  nn::Embedding emb(50, 8, 3, gen);
  CHECK(emb.weight.shape() == Shape{50, 8});
  CHECK(emb.weight.dtype() == Float32);
  CHECK(emb.padding_idx() == 3);
  CHECK(emb.num_embeddings() == 50);
  CHECK(emb.embedding_dim() == 8);
  CHECK(emb.named_parameters().size() == 1);
  CHECK(emb.named_parameters()[0].first == "weight");
  double sum = 0, sum_sq = 0;
  int zeros_outside_padding = 0;
  for (std::int64_t r = 0; r < 50; ++r)
    for (std::int64_t j = 0; j < 8; ++j) {
      const double v = emb.weight.at({r, j});
      if (r == 3) {
        CHECK(v == 0.0);
        continue;
      }
      sum += v;
      sum_sq += v * v;
      zeros_outside_padding += v == 0.0;
    }
  CHECK(zeros_outside_padding == 0);
  const double n = 49 * 8, mean = sum / n, var = sum_sq / n - mean * mean;
  CHECK(std::abs(mean) < 0.2);  // 392 draws: the standard error of the mean is 0.05
  CHECK(var > 0.75);
  CHECK(var < 1.25);

  nn::Embedding last(5, 2, -1, gen, Float64);  // negative: from the end, as in PyTorch
  CHECK(last.padding_idx() == 4);
  CHECK(last.weight.dtype() == Float64);
  CHECK(last.weight.at({4, 0}) == 0.0);
  CHECK(last.weight.at({4, 1}) == 0.0);
  nn::Embedding plain(5, 2, gen);
  CHECK(!plain.padding_idx().has_value());
}

TEST_CASE("Embedding: hand-computed lookup and gradient with repeats and padding") {
  Generator gen(0);
  nn::Embedding emb(4, 2, 0, gen, Float64);
  // Row 0 is the padding row; give it values to show that the forward still reads it.
  emb.weight.copy_(tensor({1, 2, 3, 4, 5, 6, 7, 8}, {4, 2}, Float64));
  Indices idx({1, 0, 3, 3, 3, 2}, Shape{2, 3});
  Tensor y = emb.forward(idx);
  CHECK(y.shape() == Shape{2, 3, 2});
  CHECK(y.to_vector() == Values{3, 4, 1, 2, 7, 8, 7, 8, 7, 8, 5, 6});
  // dy at position p is [2p, 2p+1]. Row 1 gets dy[0]; row 3 gets dy[2] + dy[3] + dy[4]
  // = [4+6+8, 5+7+9]; row 2 gets dy[5]; row 0 (padding) gets nothing.
  y.backward(reshape(arange(12, Float64), {2, 3, 2}));
  CHECK(emb.weight.grad().to_vector() == Values{0, 0, 0, 1, 10, 11, 18, 21});

  // A second backward accumulates and still leaves the padding row alone.
  emb.forward(Indices({0, 0, 1})).backward(ones({3, 2}, Float64));
  CHECK(emb.weight.grad().to_vector() == Values{0, 0, 1, 2, 10, 11, 18, 21});
}

TEST_CASE("Embedding: index shapes, including one token, rank 3 and no tokens") {
  Generator gen(1);
  nn::Embedding emb(6, 3, gen, Float64);
  Tensor one = emb.forward(Indices({5}));
  CHECK(one.shape() == Shape{1, 3});
  CHECK(one.to_vector() == Values{emb.weight.at({5, 0}), emb.weight.at({5, 1}), emb.weight.at({5, 2})});
  Tensor cube = emb.forward(Indices({0, 1, 2, 3, 4, 5, 0, 1}, Shape{2, 2, 2}));
  CHECK(cube.shape() == Shape{2, 2, 2, 3});
  CHECK(cube.at({1, 1, 0, 2}) == emb.weight.at({0, 2}));
  Tensor none = emb.forward(Indices(std::vector<std::int64_t>{}));
  CHECK(none.shape() == Shape{0, 3});
  none.backward(zeros({0, 3}, Float64));
  CHECK(emb.weight.grad().to_vector() == Values(18, 0.0));
}

TEST_CASE("Embedding: index_select is the oracle (padding row aside)") {
  Generator gen(9);
  Tensor table = normal({7, 5}, 0, 1, gen, Float64);
  Indices idx({2, 6, 2, 0, 4, 4, 4, 1, 2, 6, 0, 3}, Shape{3, 4});
  Tensor r = normal({3, 4, 5}, 0, 1, gen, Float64);
  for (DType dtype : {Float64, Float32}) {
    Tensor w_oracle = table.to(dtype).clone().requires_grad_();
    Tensor y_oracle = index_select(w_oracle, idx);
    y_oracle.backward(r.to(dtype));
    for (std::optional<std::int64_t> pad : {std::optional<std::int64_t>{}, std::optional<std::int64_t>{4}}) {
      CAPTURE(pad.value_or(-1));
      Tensor w = table.to(dtype).clone().requires_grad_();
      Tensor y = nn::embedding(w, idx, pad);
      CHECK(equal(y, y_oracle));
      y.backward(r.to(dtype));
      Tensor expect = w_oracle.grad().clone();
      if (pad)
        for (std::int64_t j = 0; j < 5; ++j) {
          CHECK(expect.at({*pad, j}) != 0.0);  // the oracle does send gradient there
          expect.set({*pad, j}, 0.0);
        }
      CHECK(equal(w.grad(), expect));
    }
  }
}

TEST_CASE("Embedding: float64 gradcheck of the table") {
  Generator gen(21);
  nn::Embedding emb(6, 4, gen);
  emb.to(Float64);
  Indices idx({5, 1, 1, 0, 3, 1}, Shape{2, 3});
  GradcheckReport report = gradcheck([&](const std::vector<Tensor>&) { return emb.forward(idx); }, {emb.weight});
  CHECK_MESSAGE(report.passed, report.str());

  // With padding: the padding row's value reaches the output but gets no gradient
  // by design, so the check masks the padding positions out of the loss; every
  // other row must then match finite differences exactly as before.
  nn::Embedding padded(6, 4, 1, gen);
  padded.to(Float64);
  Tensor keep = tensor({1, 0, 0, 1, 1, 0}, {2, 3, 1}, Float64);  // 0 where idx == 1
  auto fn = [&](const std::vector<Tensor>&) { return mul(padded.forward(idx), keep); };
  report = gradcheck(fn, {padded.weight});
  CHECK_MESSAGE(report.passed, report.str());
}

TEST_CASE("Embedding: the padding row stays zero through optimizer steps") {
  Generator gen(2);
  nn::Embedding emb(5, 3, 0, gen);
  optim::SGD opt(emb.parameters(), 0.5, {.momentum = 0.9});
  Tensor before = emb.weight.clone();
  for (int step = 0; step < 3; ++step) {
    opt.zero_grad();
    emb.forward(Indices({0, 2, 0, 4}, Shape{2, 2})).backward(ones({2, 2, 3}));
    opt.step();
  }
  for (std::int64_t j = 0; j < 3; ++j) {
    CHECK(emb.weight.at({0, j}) == 0.0);
    CHECK(emb.weight.at({1, j}) == before.at({1, j}));  // never looked up
    CHECK(emb.weight.at({2, j}) != before.at({2, j}));
  }
}

TEST_CASE("Embedding: errors name the index, its position and the table size") {
  Generator gen(0);
  nn::Embedding emb(5, 2, gen);
  CHECK_THROWS_WITH_AS(emb.forward(Indices({0, 7, 1})),
                       "embedding: index 7 at position 1 is out of range for a table of 5 rows", Error);
  CHECK_THROWS_WITH_AS(emb.forward(Indices({0, 1, 2, 3, 4, -1}, Shape{2, 3})),
                       "embedding: index -1 at position [1, 2] is out of range for a table of 5 rows", Error);
  CHECK_THROWS_WITH_AS(emb.forward(Indices({0, 1, 5}, Shape{3})),
                       "embedding: index 5 at position 2 is out of range for a table of 5 rows", Error);
  Indices broken({0, 1, 2});
  broken.shape = Shape{2, 2};  // the fields are public: a caller can break the invariant
  CHECK_THROWS_WITH_AS(emb.forward(broken),
                       "embedding: indices hold 3 values but their shape [2, 2] holds 4", Error);
  CHECK_THROWS_WITH_AS(nn::Embedding(5, 2, 5, gen),
                       "Embedding: padding_idx 5 is out of range for a table of 5 rows (allowed: -5 to 4)", Error);
  CHECK_THROWS_WITH_AS(nn::Embedding(5, 2, -6, gen),
                       "Embedding: padding_idx -6 is out of range for a table of 5 rows (allowed: -5 to 4)", Error);
  CHECK_THROWS_WITH_AS(nn::Embedding(0, 2, gen), "Embedding: num_embeddings and dim must be positive, got 0 and 2",
                       Error);
  CHECK_THROWS_WITH_AS(nn::embedding(zeros({3}), Indices({0})), "embedding: the weight must be (N, D), got shape [3]",
                       Error);
  CHECK_THROWS_WITH_AS(nn::embedding(zeros({3, 2}), Indices({0}), 3),
                       "embedding: padding_idx 3 is out of range for a table of 3 rows", Error);
  CHECK_THROWS_WITH_AS(nn::embedding(Tensor(), Indices({0})), "embedding: weight is an undefined tensor", Error);
}
