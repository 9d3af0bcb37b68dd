#include "layers/embedding.hpp"

#include <cstring>
#include <vector>

#include "autograd/node.hpp"
#include "autograd/ops.hpp"

namespace attend::nn {

namespace {

// The multi-index of flat position p in shape, for error messages.
std::vector<std::int64_t> unravel(std::int64_t p, const Shape& shape) {
  std::vector<std::int64_t> index(static_cast<std::size_t>(shape.rank()));
  for (int d = shape.rank() - 1; d >= 0; --d) {
    index[d] = shape[d] == 0 ? 0 : p % shape[d];
    p = shape[d] == 0 ? 0 : p / shape[d];
  }
  return index;
}

void check_indices(const Indices& indices, std::int64_t rows) {
  if (indices.numel() != indices.shape.numel())
    fail("embedding: indices hold {} values but their shape {} holds {}", indices.numel(), indices.shape,
         indices.shape.numel());
  if (indices.shape.rank() >= kMaxRank)
    fail("embedding: indices of shape {} have rank {}; at most {} is supported (the result adds an axis)",
         indices.shape, indices.shape.rank(), kMaxRank - 1);
  for (std::int64_t p = 0; p < indices.numel(); ++p) {
    const std::int64_t index = indices.values[p];
    if (index >= 0 && index < rows) continue;
    if (indices.shape.rank() <= 1)
      fail("embedding: index {} at position {} is out of range for a table of {} rows", index, p, rows);
    fail("embedding: index {} at position [{}] is out of range for a table of {} rows", index,
         fmt::join(unravel(p, indices.shape), ", "), rows);
  }
}

}  // namespace

// y[p, :] = W[idx[p], :]   dW[idx[p], :] += dy[p, :] for every p with idx[p] != padding_idx
// (repeated indices add up; the padding row gets nothing)
Tensor embedding(const Tensor& weight, const Indices& indices, std::optional<std::int64_t> padding_idx) {
  check_defined("embedding", weight, "weight");
  if (weight.dim() != 2) fail("embedding: the weight must be (N, D), got shape {}", weight.shape());
  const std::int64_t rows = weight.size(0), D = weight.size(1);
  if (padding_idx && (*padding_idx < 0 || *padding_idx >= rows))
    fail("embedding: padding_idx {} is out of range for a table of {} rows", *padding_idx, rows);
  check_indices(indices, rows);
  Shape out = indices.shape;
  out.push_back(D);
  Tensor y = empty(out, weight.dtype());
  if (y.numel() > 0) {  // memcpy wants real pointers, even for 0 bytes
    dispatch(weight.dtype(), [&](auto zero) {
      using T = decltype(zero);
      const T* W = weight.data<T>();  // (N, D)
      T* py = y.data<T>();            // (P, D)
      for (std::int64_t p = 0; p < indices.numel(); ++p)
        std::memcpy(py + p * D, W + indices.values[p] * D, static_cast<std::size_t>(D) * sizeof(T));
    });
  }
  const std::int64_t pad = padding_idx.value_or(-1);
  record("embedding", {weight}, {&y}, [values = indices.values, D, pad](Grads& g) {
    dispatch(g.dy().dtype(), [&](auto zero) {
      using T = decltype(zero);
      const T* dy = g.dy().data<T>();  // (P, D)
      T* dW = g.dx(0).data<T>();       // (N, D)
      for (std::size_t p = 0; p < values.size(); ++p) {
        if (values[p] == pad) continue;
        T* row = dW + values[p] * D;
        const T* src = dy + static_cast<std::int64_t>(p) * D;
        for (std::int64_t j = 0; j < D; ++j) row[j] += src[j];
      }
    });
  })
      .replay({"weight"}, [indices, padding_idx](const Tensors& in) {
        // The padding row gets no gradient by convention, not by derivation: it is
        // a constant of the model. The replay holds it at 0 through a mask, so that
        // finite differences compare against that convention.
        if (!padding_idx) return Tensors{embedding(in[0], indices)};
        Tensor keep = ones({in[0].size(0), 1}, in[0].dtype());
        keep.set({*padding_idx, 0}, 0.0);
        return Tensors{embedding(in[0] * keep, indices, padding_idx)};
      });
  return y;
}

Embedding::Embedding(std::int64_t num_embeddings, std::int64_t dim, std::optional<std::int64_t> padding_idx,
                     Generator& gen, DType dtype)
    : num_(num_embeddings), dim_(dim) {
  if (num_embeddings <= 0 || dim <= 0)
    fail("Embedding: num_embeddings and dim must be positive, got {} and {}", num_embeddings, dim);
  if (padding_idx) {
    const std::int64_t p = *padding_idx < 0 ? *padding_idx + num_embeddings : *padding_idx;
    if (p < 0 || p >= num_embeddings)
      fail("Embedding: padding_idx {} is out of range for a table of {} rows (allowed: -{} to {})", *padding_idx,
           num_embeddings, num_embeddings, num_embeddings - 1);
    padding_idx_ = p;
  }
  weight = normal({num_embeddings, dim}, 0.0, 1.0, gen, dtype);
  if (padding_idx_) {
    dispatch(dtype, [&](auto zero) {
      using T = decltype(zero);
      T* row = weight.data<T>() + *padding_idx_ * dim;
      for (std::int64_t j = 0; j < dim; ++j) row[j] = T(0);
    });
  }
  register_parameter("weight", weight);
}

Tensor Embedding::forward(const Indices& indices) const { return embedding(weight, indices, padding_idx_); }

}  // namespace attend::nn
