#pragma once
// NumPy broadcasting for binary ops. Shapes are aligned at their last axis; an
// axis of size 1 (or a missing leading axis) stretches to the other's size.
// Used by the ops in autograd/ops/ alone; not part of the API.
//
// BroadcastIter visits every output element once with the matching element
// index in each input, so a backward can write  da[ia] += dy[i] * ...  and the
// sum over broadcast axes happens by itself.
#include <array>
#include <cstdint>

#include "core/shape.hpp"

namespace attend {

Shape broadcast_shapes(const char* op, const Shape& a, const Shape& b);

class BroadcastIter {
 public:
  BroadcastIter(const Shape& out, const Shape& a, const Shape& b);

  // f(i, ia, ib) for every output element i in row-major order.
  template <class F>
  void run(F&& f) const {
    const std::int64_t total = out_.numel();
    if (total == 0) return;
    if (out_.rank() == 0) {
      f(std::int64_t{0}, std::int64_t{0}, std::int64_t{0});
      return;
    }
    const int r = out_.rank();
    const std::int64_t inner = out_[r - 1], sa = sa_[r - 1], sb = sb_[r - 1];
    std::array<std::int64_t, kMaxRank> idx{};
    std::int64_t ia = 0, ib = 0;
    for (std::int64_t base = 0; base < total; base += inner) {
      for (std::int64_t j = 0; j < inner; ++j) f(base + j, ia + j * sa, ib + j * sb);
      for (int d = r - 2; d >= 0; --d) {  // odometer over the outer axes
        ia += sa_[d];
        ib += sb_[d];
        if (++idx[d] < out_[d]) break;
        ia -= sa_[d] * out_[d];
        ib -= sb_[d] * out_[d];
        idx[d] = 0;
      }
    }
  }

 private:
  Shape out_;
  std::array<std::int64_t, kMaxRank> sa_{}, sb_{};  // 0 on broadcast axes
};

}  // namespace attend
