// attend.train, attend.Translator, attend.explain, attend.bleu (helper pyhigh fills this in).
#include "bindings.hpp"

namespace attend_py {

void bind_highlevel(py::module_& /*m*/) {}

}  // namespace attend_py
