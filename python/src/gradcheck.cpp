// attend.gradcheck: autograd/gradcheck/ from Python (written in the next step).
#include "bindings.hpp"

namespace attend_py {

void bind_gradcheck(py::module_& /*m*/) {}

}  // namespace attend_py
