// Autograd from Python: attend.no_grad() / enable_grad() as context managers,
// attend.backward of several roots, attend.to_dot, and attend.CustomOp: an op with
// a Python forward and backward, recorded on the tape as one node
// (autograd/custom_op.hpp). The ctx and g objects a CustomOp's callables receive
// are valid only during that call: kept and used later, they raise attend.Error.
#include <pybind11/stl.h>

#include <memory>
#include <string>
#include <vector>

#include "autograd/custom_op.hpp"
#include "autograd/dot.hpp"
#include "autograd/grad_mode.hpp"
#include "autograd/node.hpp"
#include "bindings.hpp"

namespace attend_py {
namespace {

using attend::Tensor;
using attend::Tensors;

// with attend.no_grad(): ... ; the previous mode comes back on exit, exception or not.
struct GradModeScope {
  bool enabled;
  bool previous = true;
  void enter() {
    previous = attend::GradMode::enabled();
    attend::GradMode::set_enabled(enabled);
  }
  void exit() { attend::GradMode::set_enabled(previous); }
};

void bind_grad_mode(py::module_& m) {
  py::class_<GradModeScope>(m, "_GradModeScope")
      .def("__enter__", [](GradModeScope& s) { s.enter(); })
      .def("__exit__", [](GradModeScope& s, const py::args&) { s.exit(); return false; });
  m.def("no_grad", [] { return GradModeScope{false}; },
        "no_grad() -> context manager\n\nInside `with attend.no_grad():` no op is recorded (evaluation, decoding, "
        "updates by hand).");
  m.def("enable_grad", [] { return GradModeScope{true}; },
        "enable_grad() -> context manager: ops are recorded inside, whatever the caller had.");
  m.def("is_grad_enabled", &attend::GradMode::enabled);
  m.def("set_anomaly_enabled", &attend::AnomalyMode::set_enabled, py::arg("enabled"),
        "When on, the first op whose output or gradient is not finite raises attend.Error naming it (slow).");
}

void bind_backward_and_dot(py::module_& m) {
  m.def("backward", [](const Tensors& roots, const Tensors& grads, bool retain_graph) {
    run_released(true, [&] { attend::backward(roots, grads, retain_graph); });
  }, py::arg("roots"), py::arg("grads"), py::arg("retain_graph") = false,
        "Gradient of several outputs at once: of sum_k <roots[k], grads[k]>.");
  m.def("to_dot", [](const Tensor& root, const std::vector<std::pair<Tensor, std::string>>& names) {
    return attend::to_dot(root, names);
  }, py::arg("root"), py::arg("names") = std::vector<std::pair<Tensor, std::string>>{},
        "The graph recorded behind root as Graphviz DOT text; names: [(tensor, 'W_q'), ...] labels leaves.");
}

// What a Python forward sees as ctx.
class PyOpContext {
 public:
  PyOpContext(attend::OpContext* forward, const attend::OpContext* backward, std::string op)
      : forward_(forward), backward_(backward), op_(std::move(op)) {}
  void release() { forward_ = nullptr, backward_ = nullptr; }

  void save(const py::args& tensors) {
    context();  // raises if the ctx was kept past its call
    if (!forward_) attend::fail("{}: ctx.save is for the forward, while it runs", op_);
    Tensors list;
    for (const py::handle& t : tensors) list.push_back(to_tensor(t, attend::DType::Float32, op_.c_str(), "ctx.save's argument"));
    forward_->save(list);
  }
  Tensor saved(std::size_t i) const { return context().saved(i); }
  py::tuple saved_tensors() const {
    const attend::OpContext& c = context();
    py::tuple out(c.saved_count());
    for (std::size_t i = 0; i < c.saved_count(); ++i) out[i] = c.saved(i);
    return out;
  }
  bool needs_input_grad(std::size_t i) const { return context().needs_input_grad(i); }

 private:
  const attend::OpContext& context() const {
    if (forward_) return *forward_;
    if (backward_) return *backward_;
    attend::fail("{}: this ctx was kept past the forward or backward it was given to; it is released then", op_);
  }
  attend::OpContext* forward_;
  const attend::OpContext* backward_;
  std::string op_;
};

// What a Python backward sees as g: dy(k), and dx(i), the slot to add into.
class PyGrads {
 public:
  PyGrads(attend::Grads* g, std::size_t inputs, std::size_t outputs, std::string op)
      : g_(g), inputs_(inputs), outputs_(outputs), op_(std::move(op)) {}
  void release() { g_ = nullptr; }

  py::object dy(std::size_t k) const {
    check(k, outputs_, "dy", "output");
    const Tensor& dy = grads().dy(static_cast<int>(k));
    return dy.defined() ? py::cast(dy) : py::none();
  }
  bool needs(std::size_t i) const {
    check(i, inputs_, "needs", "input");
    return grads().needs(static_cast<int>(i));
  }
  Tensor dx(std::size_t i) const {
    if (!needs(i)) attend::fail("{}: g.dx({}): input {} takes no gradient; ask g.needs({}) first", op_, i, i, i);
    return grads().dx(static_cast<int>(i));  // a handle on the slot: add_ writes into it
  }

 private:
  attend::Grads& grads() const {
    if (!g_) attend::fail("{}: this g was kept past the backward it was given to; it is released then", op_);
    return *g_;
  }
  void check(std::size_t i, std::size_t count, const char* what, const char* kind) const {
    if (i >= count) attend::fail("{}: g.{}({}) but the op has {} {}(s)", op_, what, i, count, kind);
  }
  attend::Grads* g_;
  std::size_t inputs_, outputs_;
  std::string op_;
};

// Releases a ctx or g wrapper when the Python call that was given it returns or raises.
template <class T>
struct ReleaseAfterCall {
  T* wrapper;
  ~ReleaseAfterCall() { wrapper->release(); }
};

// A Python function object shared by std::functions that may die without the GIL.
std::shared_ptr<py::function> hold(const py::function& f) {
  return std::shared_ptr<py::function>(new py::function(f), [](py::function* p) {
    if (!Py_IsInitialized()) return;
    py::gil_scoped_acquire gil;
    delete p;
  });
}

Tensors outputs_of(const py::object& result, const std::string& op) {
  if (py::isinstance<Tensor>(result)) return {result.cast<Tensor>()};
  if (!py::isinstance<py::tuple>(result) && !py::isinstance<py::list>(result))
    attend::fail("{}: forward must return a Tensor or a tuple of Tensors, not {}", op,
                 std::string(py::str(py::type::of(result).attr("__name__"))));
  Tensors out;
  for (const py::handle& t : result) {
    if (!py::isinstance<Tensor>(t)) attend::fail("{}: forward returned a {} among its outputs; return Tensors", op,
                                                 std::string(py::str(py::type::of(t).attr("__name__"))));
    out.push_back(t.cast<Tensor>());
  }
  return out;
}

class PyCustomOp {
 public:
  PyCustomOp(std::string name, py::function forward, py::function backward, std::vector<std::string> input_names)
      : name_(std::move(name)), forward_(hold(forward)), backward_(hold(backward)), input_names_(std::move(input_names)) {}

  py::object call(const py::args& args) const {
    Tensors inputs;
    for (const py::handle& a : args) {
      if (!py::isinstance<Tensor>(a)) attend::fail("{}: every input must be a Tensor, got {}", name_,
                                                   std::string(py::str(py::type::of(a).attr("__name__"))));
      inputs.push_back(a.cast<Tensor>());
    }
    auto outputs_count = std::make_shared<std::size_t>(0);
    const std::size_t inputs_count = inputs.size();
    attend::CustomOp op{
        .name = name_,
        .input_names = input_names_,
        .forward = [f = forward_, name = name_, outputs_count](attend::OpContext& ctx, const Tensors& in) {
          py::gil_scoped_acquire gil;
          auto wrapper = std::make_shared<PyOpContext>(&ctx, nullptr, name);
          ReleaseAfterCall<PyOpContext> release{wrapper.get()};
          py::tuple args(in.size() + 1);
          args[0] = py::cast(wrapper);
          for (std::size_t i = 0; i < in.size(); ++i) args[i + 1] = in[i];
          Tensors out = outputs_of((*f)(*args), name);
          *outputs_count = out.size();
          return out;
        },
        .backward = [b = backward_, name = name_, outputs_count, inputs_count](const attend::OpContext& ctx,
                                                                               attend::Grads& g) {
          py::gil_scoped_acquire gil;
          auto ctx_wrapper = std::make_shared<PyOpContext>(nullptr, &ctx, name);
          auto g_wrapper = std::make_shared<PyGrads>(&g, inputs_count, *outputs_count, name);
          ReleaseAfterCall<PyOpContext> release_ctx{ctx_wrapper.get()};
          ReleaseAfterCall<PyGrads> release_g{g_wrapper.get()};
          (*b)(ctx_wrapper, g_wrapper);
        }};
    Tensors outputs = op(inputs);
    if (outputs.size() == 1) return py::cast(outputs[0]);
    return py::cast(outputs);
  }
  const std::string& name() const { return name_; }

 private:
  std::string name_;
  std::shared_ptr<py::function> forward_, backward_;
  std::vector<std::string> input_names_;
};

void bind_custom_op(py::module_& m) {
  py::class_<PyOpContext, std::shared_ptr<PyOpContext>>(m, "OpContext",
      "What a CustomOp's forward hands its backward. Valid only while forward or backward runs.")
      .def("save", &PyOpContext::save, "save(*tensors): keeps tensors for the backward (forward only).")
      .def("saved", &PyOpContext::saved, py::arg("i"), "The i-th saved tensor.")
      .def_property_readonly("saved_tensors", &PyOpContext::saved_tensors)
      .def("needs_input_grad", &PyOpContext::needs_input_grad, py::arg("i"),
           "Whether a backward will want the gradient of input i.");
  py::class_<PyGrads, std::shared_ptr<PyGrads>>(m, "Grads",
      "What a CustomOp's backward sees: dy(k), the gradient of output k, and dx(i), input i's gradient slot,\n"
      "which the backward adds into (g.dx(i).add_(...) or dx += ...), never assigns. Valid only during the backward.")
      .def("dy", &PyGrads::dy, py::arg("k") = 0)
      .def("dx", &PyGrads::dx, py::arg("i"))
      .def("needs", &PyGrads::needs, py::arg("i"));
  py::class_<PyCustomOp>(m, "CustomOp",
      "CustomOp(name, forward, backward, input_names=None)\n\n"
      "An op of your own, recorded on the tape as one node named `name`, like torch.autograd.Function:\n"
      "  forward(ctx, *inputs) -> Tensor or tuple of Tensors; runs with recording off; ctx.save(t, ...) keeps\n"
      "      what the backward needs.\n"
      "  backward(ctx, g) -> None: for each input i with g.needs(i), adds its gradient into g.dx(i):\n"
      "      g.dx(0).add_(g.dy() * (1 - y * y)). Add, never assign: attend.gradcheck catches an assignment.\n"
      "Call it on tensors: y = op(x). Non-tensor arguments are captured by the functions (closures).")
      .def(py::init<std::string, py::function, py::function, std::vector<std::string>>(), py::arg("name"),
           py::arg("forward"), py::arg("backward"), py::arg("input_names") = std::vector<std::string>{})
      .def("__call__", &PyCustomOp::call, "op(*inputs) -> Tensor, or a tuple for several outputs")
      .def_property_readonly("name", &PyCustomOp::name)
      .def("__repr__", [](const PyCustomOp& op) { return "<attend.CustomOp '" + op.name() + "'>"; });
}

}  // namespace

void bind_autograd(py::module_& m) {
  bind_grad_mode(m);
  bind_backward_and_dot(m);
  bind_custom_op(m);
}

}  // namespace attend_py
