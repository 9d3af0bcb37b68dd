// attend.nn's layers, optimizers and schedules (helper pyhigh fills this in).
#include "bindings.hpp"

namespace attend_py {

void bind_nn(py::module_& /*m*/) {}

}  // namespace attend_py
