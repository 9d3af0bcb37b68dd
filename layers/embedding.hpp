#pragma once
// Embedding: a table of num_embeddings vectors of size dim; forward looks rows up
// by token id, like torch.nn.Embedding.
//
//   attend::nn::Embedding emb(V, H, /*padding_idx=*/0, gen);
//   Tensor x = emb.forward(tokens);   // tokens (B, T) -> x (B, T, H)
//
// Initialisation is PyTorch's: normal(0, 1), with the padding row zeroed. The
// padding row never receives a gradient, so it stays where it is (zero, unless
// set otherwise) however often padding tokens are looked up.
#include <cstdint>
#include <optional>

#include "core/random.hpp"
#include "core/tensor.hpp"
#include "layers/module.hpp"

namespace attend::nn {

// The recorded op behind Embedding (torch.nn.functional.embedding):
// weight (N, D), indices of any shape with values in [0, N) -> (indices..., D).
// padding_idx, when given, must be in [0, N); rows looked up at padding_idx are
// returned as they are, but the backward adds nothing to that row.
Tensor embedding(const Tensor& weight, const Indices& indices, std::optional<std::int64_t> padding_idx = {});

class Embedding : public Module {
 public:
  // padding_idx may be negative, counting from the end as in PyTorch (-1 is the last row).
  Embedding(std::int64_t num_embeddings, std::int64_t dim, std::optional<std::int64_t> padding_idx, Generator& gen,
            DType dtype = Float32);
  Embedding(std::int64_t num_embeddings, std::int64_t dim, Generator& gen, DType dtype = Float32)
      : Embedding(num_embeddings, dim, std::nullopt, gen, dtype) {}

  // indices (...) -> (..., dim)
  Tensor forward(const Indices& indices) const;

  std::int64_t num_embeddings() const { return num_; }
  std::int64_t embedding_dim() const { return dim_; }
  std::optional<std::int64_t> padding_idx() const { return padding_idx_; }  // in [0, num)

  Tensor weight;  // (num_embeddings, dim)

 private:
  std::int64_t num_, dim_;
  std::optional<std::int64_t> padding_idx_;
};

}  // namespace attend::nn
