#pragma once
// The Python module attend._attend is bound in several files, one concern each;
// module.cpp calls every bind_* below in this order (later ones use the types
// earlier ones registered).
//   tensor.cpp     attend.Tensor, NumPy in and out, factories, attend.Generator
//   ops.cpp        every op of autograd/ops.hpp under its C++ name, and the operators
//   autograd.cpp   no_grad, backward of several roots, attend.CustomOp
//   gradcheck.cpp  attend.gradcheck and its report
//   nn.cpp         attend.nn's layers, optimizers and schedules
//   highlevel.cpp  train, Translator, explain, bleu
#include <pybind11/pybind11.h>

#include <atomic>
#include <csignal>
#include <utility>

#include "core/tensor.hpp"

namespace attend_py {

namespace py = pybind11;

void bind_tensor(py::module_& m);
void bind_ops(py::module_& m);
void bind_autograd(py::module_& m);
void bind_gradcheck(py::module_& m);
void bind_nn(py::module_& m);
void bind_highlevel(py::module_& m);

// A dtype argument: None (-> fallback), attend.float32/float64, "float32"/"float64",
// or anything numpy.dtype() reads as one of them (np.float32); else attend.Error.
attend::DType to_dtype(const py::handle& dtype, attend::DType fallback, const char* op);
// A Python object as a tensor: a Tensor passes through; a NumPy array, a (nested)
// list or a number is copied by attend.tensor's rules (dtype: the array's float
// type, else `fallback`). `op` and `what` name it in errors.
attend::Tensor to_tensor(const py::handle& value, attend::DType fallback, const char* op, const char* what);
// Integer indices (token ids, targets) from a list, an integer array or a number.
attend::Indices to_indices(const py::handle& value, const char* op, const char* what);
// A shape from a tuple or list of ints, or one int.
attend::Shape to_shape(const py::handle& value, const char* op);

// Tensors with more elements than this release the GIL while an op runs on them:
// below it, releasing and taking it back again costs more than the op.
inline constexpr std::int64_t kReleaseGilElements = std::int64_t{1} << 15;

// Runs f without the GIL when `large`, then raises KeyboardInterrupt (or another
// pending signal's exception) if Ctrl-C came meanwhile: Python only sees a signal
// when it runs Python code again, which a long C++ call would otherwise delay.
template <class F>
decltype(auto) run_released(bool large, F&& f) {
  if (!large) return f();
  struct CheckSignals {
    ~CheckSignals() noexcept(false) {
      if (std::uncaught_exceptions() == 0 && PyErr_CheckSignals() != 0) throw py::error_already_set();
    }
  } check;  // destroyed after the GIL is back (declared before `release`)
  py::gil_scoped_release release;
  return f();
}

// For C++ work that can stop early (the trainer's `stop` flag, a translation
// loop): while a StopOnInterrupt lives, SIGINT sets stop() instead of reaching
// Python's handler; raise_if_stopped() then raises KeyboardInterrupt, once the
// work has stopped cleanly (a checkpoint is written whole or not at all). The
// previous handler comes back when it goes out of scope. Construct and destroy it
// holding the GIL, on the main thread (only it receives Python's signals).
class StopOnInterrupt {
 public:
  StopOnInterrupt();
  ~StopOnInterrupt();
  StopOnInterrupt(const StopOnInterrupt&) = delete;
  StopOnInterrupt& operator=(const StopOnInterrupt&) = delete;

  const std::atomic<bool>* stop() const;
  bool stopped() const;
  void raise_if_stopped() const;  // throws py::error_already_set (KeyboardInterrupt)

 private:
  struct sigaction previous_ {};
  bool installed_ = false;
};

}  // namespace attend_py
