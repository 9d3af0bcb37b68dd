// Ops that move data around without arithmetic: transpose, reshape, concat,
// slice, stack, and the embedding gather index_select. Each forward is followed
// by its backward; the comment above each op is the formula pair.
//
// Most of them see a tensor as (outer, size, inner) around one axis: outer is
// the product of the sizes before the axis, inner of those after it. A block of
// `size * inner` elements per outer index is contiguous, so copies are memcpy's.
#include <algorithm>
#include <type_traits>
#include <cstring>
#include <utility>

#include "autograd/ops.hpp"
#include "core/small_objects.hpp"
#include "core/kernels/detail/transpose.hpp"

namespace attend {

namespace {

struct AxisSplit {
  std::int64_t outer = 1, size = 1, inner = 1;
};

AxisSplit split_at(const Shape& shape, int axis) {
  AxisSplit s;
  s.outer = shape.count(0, axis);
  s.size = shape[axis];
  s.inner = shape.count(axis + 1, shape.rank());
  return s;
}

// For each of `rows` rows: dst[r*dst_stride + j] (= or +=) src[r*src_stride + j], j < width.
template <class T>
void copy_rows(std::int64_t rows, std::int64_t width, const T* src, std::int64_t src_stride, T* dst,
               std::int64_t dst_stride, bool accumulate) {
  if (rows == 0 || width == 0) return;
  for (std::int64_t r = 0; r < rows; ++r) {
    const T* s = src + r * src_stride;
    T* d = dst + r * dst_stride;
    if (accumulate) {
      for (std::int64_t j = 0; j < width; ++j) d[j] += s[j];
    } else {
      std::memcpy(d, s, static_cast<std::size_t>(width) * sizeof(T));
    }
  }
}

// src is laid out (outer, a, mid, b, inner), dst (outer, b, mid, a, inner):
// dst[o, j, m, i, :] (= or +=) src[o, i, m, j, :]. Writes dst in order (a plain
// matrix transpose, mid = inner = 1, in tiles).
template <class T>
void swap_axes(const T* src, T* dst, std::int64_t outer, std::int64_t a, std::int64_t mid, std::int64_t b,
               std::int64_t inner, bool accumulate) {
  if (mid == 1 && inner == 1) {  // a plain matrix transpose per outer index: in tiles
    for (std::int64_t o = 0; o < outer; ++o) {
      if (accumulate) transpose_tiles<T, true>(src + o * a * b, b, dst + o * a * b, a, a, b);
      else transpose_tiles<T, false>(src + o * a * b, b, dst + o * a * b, a, a, b);
    }
    return;
  }
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::int64_t j = 0; j < b; ++j)
      for (std::int64_t m = 0; m < mid; ++m)
        for (std::int64_t i = 0; i < a; ++i) {
          const T* s = src + (((o * a + i) * mid + m) * b + j) * inner;
          T* d = dst + (((o * b + j) * mid + m) * a + i) * inner;
          if (inner == 1) {
            accumulate ? (*d += *s) : (*d = *s);
          } else {
            copy_rows<T>(1, inner, s, 0, d, 0, accumulate);
          }
        }
}

// The multi-index of flat position p in a row-major shape.
std::vector<std::int64_t> unravel(std::int64_t p, const Shape& shape) {
  std::vector<std::int64_t> index(static_cast<std::size_t>(shape.rank()));
  for (int d = shape.rank() - 1; d >= 0; --d) {
    index[d] = p % shape[d];
    p /= shape[d];
  }
  return index;
}

// The checks concat and stack share: a non-empty list of defined tensors of one dtype.
void check_list(const char* op, const std::vector<Tensor>& xs) {
  if (xs.empty()) fail("{}: no tensors given", op);
  for (std::size_t k = 0; k < xs.size(); ++k) {
    if (!xs[k].defined()) fail("{}: tensor {} is undefined", op, k);
    if (xs[k].dtype() != xs[0].dtype())
      fail("{}: tensor {} is {} but tensor 0 is {} (convert with .to(dtype))", op, k, xs[k].dtype(), xs[0].dtype());
  }
}

// Joins xs along one axis: y (outer, sum_k widths[k]) from x_k (outer, widths[k]).
// Both concat (width = size_k * inner) and stack (width = inner) are this;
// replay is the public op again, for gradcheck's per-node mode.
template <class Replay>
Tensor join(const char* op, const std::vector<Tensor>& xs, const Shape& out_shape, std::int64_t outer,
            const std::vector<std::int64_t>& widths, Replay replay) {
  std::int64_t total = 0;
  for (std::int64_t w : widths) total += w;
  Tensor y = empty(out_shape, xs[0].dtype());
  if (y.numel() > 0) {
    dispatch(y.dtype(), [&](auto zero) {
      using T = decltype(zero);
      T* py = y.data<T>();
      std::int64_t offset = 0;
      for (std::size_t k = 0; k < xs.size(); ++k) {
        copy_rows<T>(outer, widths[k], xs[k].data<T>(), widths[k], py + offset, total, false);
        offset += widths[k];
      }
    });
  }
  record(op, xs, {&y}, [outer, total, widths](Grads& g) {
    if (g.dy().numel() == 0) return;
    dispatch(g.dy().dtype(), [&](auto zero) {
      using T = decltype(zero);
      const T* dy = g.dy().data<T>();
      std::int64_t offset = 0;
      for (std::size_t k = 0; k < widths.size(); ++k) {
        if (g.needs(static_cast<int>(k)))
          copy_rows<T>(outer, widths[k], dy + offset, total, g.dx(static_cast<int>(k)).data<T>(), widths[k], true);
        offset += widths[k];
      }
    });
  }).replay({}, std::move(replay));
  return y;
}

}  // namespace

// y = x with axes a0, a1 swapped   dx += dy with axes a0, a1 swapped back
Tensor transpose(const Tensor& x, int axis0, int axis1) {
  check_defined("transpose", x);
  int a0 = normalize_axis("transpose", axis0, x.shape());
  int a1 = normalize_axis("transpose", axis1, x.shape());
  if (a0 > a1) std::swap(a0, a1);
  const Shape& s = x.shape();
  Shape out = s.with(a0, s[a1]).with(a1, s[a0]);
  // x as (outer, A, mid, B, inner) with A = s[a0], B = s[a1]; y is (outer, B, mid, A, inner).
  const std::int64_t outer = s.count(0, a0), mid = s.count(a0 + 1, a1), inner = s.count(a1 + 1, s.rank());
  const std::int64_t A = a0 == a1 ? 1 : s[a0], B = a0 == a1 ? s[a0] : s[a1];
  Tensor y = empty(out, x.dtype());
  if (y.numel() > 0) {
    dispatch(x.dtype(), [&](auto zero) {
      using T = decltype(zero);
      swap_axes<T>(x.data<T>(), y.data<T>(), outer, A, mid, B, inner, false);
    });
  }
  record("transpose", {x}, {&y}, [outer, A, mid, B, inner](Grads& g) {
    if (g.dy().numel() == 0) return;
    dispatch(g.dy().dtype(), [&](auto zero) {
      using T = decltype(zero);  // dy is (outer, B, mid, A, inner), dx (outer, A, mid, B, inner)
      swap_axes<T>(g.dy().data<T>(), g.dx(0).data<T>(), outer, B, mid, A, inner, true);
    });
  })
      .replay({"x"}, [axis0, axis1](const Tensors& in) { return Tensors{transpose(in[0], axis0, axis1)}; });
  return y;
}

// y = x viewed as `shape` (the same data)   dx += dy viewed as x's shape
Tensor reshape(const Tensor& x, const Shape& shape) {
  check_defined("reshape", x);
  if (shape.numel() != x.numel())
    fail("reshape: cannot reshape {} ({} elements) into {} ({} elements)", x.shape(), x.numel(), shape,
         shape.numel());
  // A new handle on the same storage: y and x see each other's in-place updates,
  // like a PyTorch view; autograd treats y as a new tensor.
  auto impl = small_objects::make_shared<TensorImpl>();
  impl->shape = shape;
  impl->dtype = x.dtype();
  impl->storage = x.impl()->storage;
  Tensor y(std::move(impl));
  record("reshape", {x}, {&y}, [](Grads& g) {
    dispatch(g.dy().dtype(), [&](auto zero) {
      using T = decltype(zero);
      const std::int64_t n = g.dy().numel();  // row-major: the flat order is the same in both shapes
      copy_rows<T>(1, n, g.dy().data<T>(), 0, g.dx(0).data<T>(), 0, true);
    });
  })
      .replay({"x"}, [shape](const Tensors& in) { return Tensors{reshape(in[0], shape)}; });
  return y;
}

// y = [x_0, x_1, ...] joined along axis   dx_k += dy[..., off_k : off_k + n_k, ...]
Tensor concat(const std::vector<Tensor>& xs, int axis) {
  check_list("concat", xs);
  const Shape& s0 = xs[0].shape();
  const int ax = normalize_axis("concat", axis, s0);
  std::int64_t total = 0;
  for (std::size_t k = 0; k < xs.size(); ++k) {
    const Shape& s = xs[k].shape();
    if (s.rank() != s0.rank())
      fail("concat: tensor {} has rank {} (shape {}) but tensor 0 has rank {} (shape {})", k, s.rank(), s,
           s0.rank(), s0);
    if (!(s.with(ax, 0) == s0.with(ax, 0)))
      fail("concat: tensor {} has shape {} but tensor 0 has shape {}; sizes must match on every axis except {}", k,
           s, s0, ax);
    total += s[ax];
  }
  const AxisSplit split = split_at(s0, ax);
  std::vector<std::int64_t> widths;  // elements per outer index contributed by each x_k
  for (const Tensor& x : xs) widths.push_back(x.size(ax) * split.inner);
  return join("concat", xs, s0.with(ax, total), split.outer, widths,
              [axis](const Tensors& in) { return Tensors{concat(in, axis)}; });
}

// y = x[..., start:end, ...] along axis   dx[..., start:end, ...] += dy
Tensor slice(const Tensor& x, int axis, std::int64_t start, std::int64_t end) {
  check_defined("slice", x);
  const int ax = normalize_axis("slice", axis, x.shape());
  const std::int64_t size = x.shape()[ax];
  if (start < 0 || start > end || end > size)
    fail("slice: the range [{}, {}) is not within axis {} of size {} (shape {}); need 0 <= start <= end <= {}", start,
         end, ax, size, x.shape(), size);
  const AxisSplit split = split_at(x.shape(), ax);
  const std::int64_t x_width = size * split.inner, y_width = (end - start) * split.inner,
                     offset = start * split.inner;
  Tensor y = empty(x.shape().with(ax, end - start), x.dtype());
  if (y.numel() > 0) {
    dispatch(x.dtype(), [&](auto zero) {
      using T = decltype(zero);
      copy_rows<T>(split.outer, y_width, x.data<T>() + offset, x_width, y.data<T>(), y_width, false);
    });
  }
  record("slice", {x}, {&y}, [outer = split.outer, x_width, y_width, offset](Grads& g) {
    if (g.dy().numel() == 0) return;
    dispatch(g.dy().dtype(), [&](auto zero) {
      using T = decltype(zero);
      copy_rows<T>(outer, y_width, g.dy().data<T>(), y_width, g.dx(0).data<T>() + offset, x_width, true);
    });
  })
      .replay({"x"}, [axis, start, end](const Tensors& in) { return Tensors{slice(in[0], axis, start, end)}; });
  return y;
}

// y[..., k, ...] = x_k (a new axis)   dx_k += dy[..., k, ...]
Tensor stack(const std::vector<Tensor>& xs, int axis) {
  check_list("stack", xs);
  const Shape& s0 = xs[0].shape();
  for (std::size_t k = 1; k < xs.size(); ++k)
    if (!(xs[k].shape() == s0))
      fail("stack: tensor {} has shape {} but tensor 0 has shape {}; stack needs equal shapes", k, xs[k].shape(), s0);
  const int rank = s0.rank() + 1;  // of the result
  if (rank > kMaxRank) fail("stack: tensors of shape {} already have the maximum rank {}", s0, kMaxRank);
  if (axis < -rank || axis >= rank)
    fail("stack: axis {} is out of range for stacking tensors of shape {} (the result has rank {})", axis, s0, rank);
  const int ax = axis < 0 ? axis + rank : axis;
  const Shape out = s0.inserted(ax, static_cast<std::int64_t>(xs.size()));
  const AxisSplit split = split_at(out, ax);  // split.size is the number of tensors
  return join("stack", xs, out, split.outer, std::vector<std::int64_t>(xs.size(), split.inner),
              [axis](const Tensors& in) { return Tensors{stack(in, axis)}; });
}

// y[p, :] = table[indices[p], :]   dtable[indices[p], :] += dy[p, :]   (repeated indices add up)
Tensor index_select(const Tensor& table, const Indices& indices) {
  check_defined("index_select", table, "table");
  if (table.dim() != 2) fail("index_select: the table must be (N, D), got shape {}", table.shape());
  if (indices.numel() != indices.shape.numel())
    fail("index_select: indices hold {} values but their shape {} holds {}", indices.numel(), indices.shape,
         indices.shape.numel());
  if (indices.shape.rank() >= kMaxRank)
    fail("index_select: indices of shape {} have rank {}; at most {} is supported (the result adds an axis)",
         indices.shape, indices.shape.rank(), kMaxRank - 1);
  const std::int64_t rows = table.size(0), D = table.size(1);
  for (std::int64_t p = 0; p < indices.numel(); ++p) {
    const std::int64_t index = indices.values[p];
    if (index < 0 || index >= rows) {
      if (indices.shape.rank() <= 1)
        fail("index_select: index {} at position {} is out of range for a table of {} rows", index, p, rows);
      fail("index_select: index {} at position [{}] is out of range for a table of {} rows", index,
           fmt::join(unravel(p, indices.shape), ", "), rows);
    }
  }
  Shape out = indices.shape;
  out.push_back(D);
  Tensor y = empty(out, table.dtype());
  if (y.numel() > 0) {
    dispatch(table.dtype(), [&](auto zero) {
      using T = decltype(zero);
      const T* pt = table.data<T>();
      T* py = y.data<T>();
      const std::size_t row_bytes = static_cast<std::size_t>(D) * sizeof(T);
      for (std::int64_t p = 0; p < indices.numel(); ++p) std::memcpy(py + p * D, pt + indices.values[p] * D, row_bytes);
    });
  }
  record("index_select", {table}, {&y}, [values = indices.values, D](Grads& g) {
    if (g.dy().numel() == 0) return;
    dispatch(g.dy().dtype(), [&](auto zero) {
      using T = decltype(zero);
      const T* dy = g.dy().data<T>();
      T* dtable = g.dx(0).data<T>();
      for (std::size_t p = 0; p < values.size(); ++p) {  // row axpy: dtable[index, :] += dy[p, :]
        const T* src = dy + static_cast<std::int64_t>(p) * D;
        T* dst = dtable + values[p] * D;
        for (std::int64_t j = 0; j < D; ++j) dst[j] += src[j];
      }
    });
  })
      .replay({"table"}, [indices](const Tensors& in) { return Tensors{index_select(in[0], indices)}; });
  return y;
}

}  // namespace attend
