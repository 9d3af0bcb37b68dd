#include "autograd/ops/detail/broadcast.hpp"

#include <algorithm>

#include "core/error.hpp"

namespace attend {

Shape broadcast_shapes(const char* op, const Shape& a, const Shape& b) {
  const int rank = std::max(a.rank(), b.rank());
  Shape out;
  for (int i = 0; i < rank; ++i) {
    const int ai = a.rank() - rank + i, bi = b.rank() - rank + i;
    const std::int64_t da = ai >= 0 ? a[ai] : 1, db = bi >= 0 ? b[bi] : 1;
    if (da != db && da != 1 && db != 1)
      fail("{}: shapes {} and {} cannot be broadcast together (axis {} has sizes {} and {})", op, a, b, i, da, db);
    out.push_back(da == 1 ? db : da);
  }
  return out;
}

BroadcastIter::BroadcastIter(const Shape& out, const Shape& a, const Shape& b) : out_(out) {
  const auto a_strides = strides_of(a), b_strides = strides_of(b);
  const int r = out.rank();
  for (int i = 0; i < r; ++i) {
    const int ai = a.rank() - r + i, bi = b.rank() - r + i;
    sa_[i] = (ai >= 0 && a[ai] != 1) ? a_strides[ai] : 0;
    sb_[i] = (bi >= 0 && b[bi] != 1) ? b_strides[bi] : 0;
  }
}

}  // namespace attend
