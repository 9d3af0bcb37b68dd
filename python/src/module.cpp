// attend._attend: the extension behind `import attend` (python/attend/__init__.py
// re-exports it). Every attend::Error becomes attend.Error, carrying the C++ message.
#include <pybind11/pybind11.h>

#include "bindings.hpp"
#include "core/error.hpp"

PYBIND11_MODULE(_attend, m) {
  m.doc() = "attend: tensors, autograd, gradcheck, layers and seq2seq models (C++20), from Python.";
  auto error = pybind11::register_exception<attend::Error>(m, "Error", PyExc_RuntimeError);
  error.doc() = "Every mistake attend can report: a shape, dtype, argument or file problem. "
                "The message is the C++ library's.";
  attend_py::bind_tensor(m);
  attend_py::bind_ops(m);
  attend_py::bind_autograd(m);
  attend_py::bind_gradcheck(m);
  attend_py::bind_nn(m);
  attend_py::bind_highlevel(m);
}
