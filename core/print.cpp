// Tensor::str(): PyTorch-like printing.
//   tensor([[ 0.1000, -2.0000],
//           [ 3.5000,  4.0000]], dtype=float64)
// Large tensors (over 1000 elements) show the first and last 3 entries of each axis.
#include <cmath>
#include <string>

#include "core/tensor.hpp"

namespace attend {
namespace {

constexpr std::int64_t kElideAbove = 1000;
constexpr std::int64_t kEdge = 3;

struct Printer {
  const Tensor& t;
  std::vector<double> values;
  bool elide;
  bool scientific = false;
  int width = 0;
  std::array<std::int64_t, kMaxRank> strides;

  std::string number(double v) const {
    if (scientific) return fmt::format("{:.4e}", v);
    return fmt::format("{:.4f}", v);
  }

  void pick_format() {
    double max_abs = 0, min_abs = INFINITY;
    for (double v : values) {
      if (!std::isfinite(v)) continue;
      max_abs = std::max(max_abs, std::abs(v));
      if (v != 0) min_abs = std::min(min_abs, std::abs(v));
    }
    scientific = max_abs >= 1e5 || (min_abs < 1e-4 && min_abs != INFINITY);
    for (double v : values) width = std::max(width, static_cast<int>(number(v).size()));
  }

  bool shown(std::int64_t i, std::int64_t n) const { return !elide || n <= 2 * kEdge || i < kEdge || i >= n - kEdge; }

  void collect(int axis, std::int64_t offset) {
    if (axis == t.dim()) {
      values.push_back(t.dtype() == Float32 ? t.data<float>()[offset] : t.data<double>()[offset]);
      return;
    }
    for (std::int64_t i = 0; i < t.shape()[axis]; ++i)
      if (shown(i, t.shape()[axis])) collect(axis + 1, offset + i * strides[axis]);
  }

  void write(std::string& out, int axis, std::int64_t offset, int indent) const {
    const std::int64_t n = t.shape()[axis];
    out += '[';
    bool first = true;
    for (std::int64_t i = 0; i < n; ++i) {
      if (!shown(i, n)) {
        if (i == kEdge) out += axis + 1 == t.dim() ? ", ..." : fmt::format(",\n{:{}}...", "", indent + 1);
        continue;
      }
      if (!first) {
        if (axis + 1 == t.dim()) out += ", ";
        else out += fmt::format(",{}{:{}}", std::string(static_cast<std::size_t>(t.dim() - axis - 1), '\n'), "", indent + 1);
      }
      first = false;
      if (axis + 1 == t.dim()) {
        double v = t.dtype() == Float32 ? t.data<float>()[offset + i] : t.data<double>()[offset + i];
        out += fmt::format("{:>{}}", number(v), width);
      } else {
        write(out, axis + 1, offset + i * strides[axis], indent + 1);
      }
    }
    out += ']';
  }
};

}  // namespace

std::string Tensor::str() const {
  if (!defined()) return "tensor(undefined)";
  Printer p{*this, {}, numel() > kElideAbove, false, 0, strides_of(shape())};
  p.collect(0, 0);
  p.pick_format();
  std::string out = "tensor(";
  if (dim() == 0) out += p.number(p.values.empty() ? 0.0 : p.values[0]);
  else if (numel() == 0) out += fmt::format("[], size={}", shape());
  else p.write(out, 0, 0, 7);
  if (dtype() == Float64) out += ", dtype=float64";
  if (requires_grad()) out += ", requires_grad=true";
  out += ')';
  return out;
}

}  // namespace attend
