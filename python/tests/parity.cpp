// python_parity: computations that python/tests/test_parity.py repeats through the
// Python module; it prints every number as a hex float, and the test compares the
// texts (bit for bit).
#include <cstdio>

#include "autograd/ops.hpp"
#include "core/random.hpp"
#include "core/tensor.hpp"

int main() { return 0; }
