// attend.gradcheck and attend.gradcheck_nodes: autograd/gradcheck/ from Python,
// calling fn(*inputs) as torch.autograd.gradcheck does, and the report they return
// (truthy when it passes; str() is the C++ report, failing elements as a table).
#include <pybind11/stl.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "autograd/gradcheck/gradcheck.hpp"
#include "bindings.hpp"

namespace attend_py {
namespace {

using attend::Tensor;
using attend::Tensors;

attend::GradcheckOptions make_options(double eps, double atol, double rtol, std::uint64_t seed, int directions,
                                      int max_reported, bool check_accumulation, bool per_node,
                                      const std::optional<std::vector<std::string>>& names) {
  attend::GradcheckOptions o;
  o.eps = eps;
  o.atol = atol;
  o.rtol = rtol;
  o.seed = seed;
  o.directions = directions;
  o.max_reported = max_reported;
  o.check_accumulation = check_accumulation;
  o.per_node = per_node;
  if (names) o.names = *names;
  return o;
}

Tensors tensors_of(const py::handle& inputs, const char* op) {
  if (py::isinstance<Tensor>(inputs)) return {inputs.cast<Tensor>()};
  if (!py::isinstance<py::tuple>(inputs) && !py::isinstance<py::list>(inputs))
    attend::fail("{}: inputs must be a Tensor or a list or tuple of Tensors, not {}", op,
                 std::string(py::str(py::type::of(inputs).attr("__name__"))));
  Tensors out;
  for (const py::handle& t : inputs) {
    if (!py::isinstance<Tensor>(t))
      attend::fail("{}: input {} is a {}, not a Tensor (attend.tensor(..., dtype=attend.float64, requires_grad=True))",
                   op, out.size(), std::string(py::str(py::type::of(t).attr("__name__"))));
    out.push_back(t.cast<Tensor>());
  }
  return out;
}

// fn(*inputs) -> Tensor or a tuple/list of Tensors.
attend::MultiOutputFn wrap(const py::function& fn, const char* op) {
  return [fn, op](const Tensors& inputs) {
    py::tuple args(inputs.size());
    for (std::size_t i = 0; i < inputs.size(); ++i) args[i] = inputs[i];
    py::object result = fn(*args);
    if (py::isinstance<Tensor>(result)) return Tensors{result.cast<Tensor>()};
    if (!py::isinstance<py::tuple>(result) && !py::isinstance<py::list>(result))
      attend::fail("{}: fn must return a Tensor or a tuple of Tensors, not {}", op,
                   std::string(py::str(py::type::of(result).attr("__name__"))));
    Tensors out;
    for (const py::handle& y : result) {
      if (!py::isinstance<Tensor>(y)) attend::fail("{}: fn returned a {} among its outputs", op,
                                                   std::string(py::str(py::type::of(y).attr("__name__"))));
      out.push_back(y.cast<Tensor>());
    }
    return out;
  };
}

// The inputs' values and .grad as they were, put back if fn raises (Ctrl-C or a bug
// in fn) while gradcheck has an element perturbed.
class InputsSnapshot {
 public:
  explicit InputsSnapshot(const Tensors& inputs) : inputs_(inputs) {
    for (const Tensor& t : inputs) {
      values_.push_back(t.defined() ? t.clone() : Tensor());
      grads_.push_back(t.defined() ? t.grad() : Tensor());
    }
  }
  void restore() {
    for (std::size_t i = 0; i < inputs_.size(); ++i) {
      if (!inputs_[i].defined()) continue;
      inputs_[i].copy_(values_[i]);
      inputs_[i].set_grad(grads_[i]);
    }
  }

 private:
  Tensors inputs_, values_, grads_;
};

using Checker = attend::GradcheckReport (*)(const attend::MultiOutputFn&, const Tensors&, const attend::GradcheckOptions&);

attend::GradcheckReport run(Checker checker, const char* op, const py::function& fn, const py::object& inputs,
                            const attend::GradcheckOptions& options) {
  const Tensors in = tensors_of(inputs, op);
  InputsSnapshot snapshot(in);
  try {
    return checker(wrap(fn, op), in, options);
  } catch (...) {
    snapshot.restore();
    throw;
  }
}

attend::GradcheckReport run_gradcheck(const attend::MultiOutputFn& fn, const Tensors& in, const attend::GradcheckOptions& o) {
  return attend::gradcheck(fn, in, o);
}
attend::GradcheckReport run_nodes(const attend::MultiOutputFn& fn, const Tensors& in, const attend::GradcheckOptions& o) {
  return attend::gradcheck_nodes(fn, in, o);
}

py::tuple shape_tuple(const attend::Shape& shape) {
  py::tuple out(shape.rank());
  for (int i = 0; i < shape.rank(); ++i) out[i] = shape[i];
  return out;
}

void bind_report_parts(py::module_& m) {
  py::class_<attend::ElementCheck>(m, "ElementCheck", "One compared element (or, with directions, one direction).")
      .def_property_readonly("index", [](const attend::ElementCheck& c) { return py::tuple(py::cast(c.index)); },
                             "The element's multi-index; () for a direction.")
      .def_readonly("analytic", &attend::ElementCheck::analytic)
      .def_readonly("numeric", &attend::ElementCheck::numeric)
      .def_readonly("abs_error", &attend::ElementCheck::abs_error)
      .def_readonly("rel_error", &attend::ElementCheck::rel_error)
      .def_readonly("tolerance", &attend::ElementCheck::tolerance)
      .def("__repr__", [](const attend::ElementCheck& c) {
        return "<ElementCheck " + std::string(py::str(py::tuple(py::cast(c.index)))) + " analytic " +
               std::to_string(c.analytic) + " numeric " + std::to_string(c.numeric) + ">";
      });
  py::class_<attend::InputReport>(m, "InputReport", "How one input's gradient compared.")
      .def_readonly("input", &attend::InputReport::input)
      .def_readonly("name", &attend::InputReport::name)
      .def_property_readonly("shape", [](const attend::InputReport& r) { return shape_tuple(r.shape); })
      .def_readonly("passed", &attend::InputReport::passed)
      .def_readonly("checked", &attend::InputReport::checked)
      .def_readonly("failed", &attend::InputReport::failed)
      .def_readonly("max_abs_error", &attend::InputReport::max_abs_error)
      .def_readonly("max_rel_error", &attend::InputReport::max_rel_error)
      .def_readonly("worst", &attend::InputReport::worst)
      .def_readonly("failures", &attend::InputReport::failures, "The first max_reported failing elements.")
      .def_readonly("assigns_instead_of_adding", &attend::InputReport::assigns_instead_of_adding,
                    "The backward threw away what was already in .grad: dx = ... where dx += ... is meant.")
      .def("__bool__", [](const attend::InputReport& r) { return r.passed; });
  py::class_<attend::NodeReport>(m, "NodeReport", "Per-node mode: one recorded op of fn, checked on its own.")
      .def_readonly("position", &attend::NodeReport::position, "In forward order, from 1.")
      .def_readonly("op", &attend::NodeReport::op)
      .def_readonly("checked", &attend::NodeReport::checked)
      .def_readonly("passed", &attend::NodeReport::passed)
      .def_readonly("note", &attend::NodeReport::note)
      .def_readonly("inputs", &attend::NodeReport::inputs)
      .def("__bool__", [](const attend::NodeReport& r) { return r.passed; });
  py::class_<attend::AccumulationFault>(m, "AccumulationFault",
                                        "An op whose backward does not add into an input's gradient slot.")
      .def_readonly("position", &attend::AccumulationFault::position)
      .def_readonly("op", &attend::AccumulationFault::op)
      .def_readonly("input", &attend::AccumulationFault::input)
      .def_property_readonly("index", [](const attend::AccumulationFault& f) { return py::tuple(py::cast(f.index)); })
      .def_readonly("seed", &attend::AccumulationFault::seed)
      .def_readonly("added", &attend::AccumulationFault::added)
      .def_readonly("result", &attend::AccumulationFault::result)
      .def("assigns", &attend::AccumulationFault::assigns, "result == added: the seed was thrown away (dx = ...).");
}

void bind_report(py::module_& m) {
  py::class_<attend::GradcheckReport>(m, "GradcheckReport",
                                      "What attend.gradcheck found: truthy when it passed; str() is the whole report.")
      .def_readonly("passed", &attend::GradcheckReport::passed)
      .def_readonly("mode", &attend::GradcheckReport::mode)
      .def_readonly("eps", &attend::GradcheckReport::eps)
      .def_readonly("atol", &attend::GradcheckReport::atol)
      .def_readonly("rtol", &attend::GradcheckReport::rtol)
      .def_readonly("inputs", &attend::GradcheckReport::inputs, "One InputReport per input that requires grad.")
      .def_readonly("nodes", &attend::GradcheckReport::nodes, "Per-node mode, when it ran: every op of fn in order.")
      .def_readonly("accumulation_checked", &attend::GradcheckReport::accumulation_checked)
      .def_readonly("accumulation_unchecked", &attend::GradcheckReport::accumulation_unchecked)
      .def_readonly("accumulation_faults", &attend::GradcheckReport::accumulation_faults)
      .def("max_abs_error", &attend::GradcheckReport::max_abs_error)
      .def("max_rel_error", &attend::GradcheckReport::max_rel_error)
      .def_property_readonly("first_wrong_node", [](const attend::GradcheckReport& r) -> py::object {
        const attend::NodeReport* node = r.first_wrong_node();
        return node ? py::cast(*node) : py::none();
      }, "The first op in forward order that disagrees (a NodeReport), or None.")
      .def("first_wrong_node_summary", &attend::GradcheckReport::first_wrong_node_summary,
           "'op: dL/dx wrong at [0, 2] (analytic ..., numeric ...)', an accumulation fault, or ''.")
      .def("__bool__", [](const attend::GradcheckReport& r) { return r.passed; })
      .def("__str__", &attend::GradcheckReport::str)
      .def("__repr__", [](const attend::GradcheckReport& r) {
        std::string s = r.passed ? "<GradcheckReport passed" : "<GradcheckReport FAILED";
        const std::string wrong = r.first_wrong_node_summary();
        if (!wrong.empty()) s += ": " + wrong;
        return s + ">";
      });
}

const char* kGradcheckDoc =
    "gradcheck(fn, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, seed=0, directions=0, max_reported=10,\n"
    "          check_accumulation=True, per_node=True, names=None) -> GradcheckReport\n\n"
    "Compares the gradients backward() gives for fn(*inputs) with central finite differences, against a random\n"
    "upstream gradient. inputs: float64 leaf tensors (those with requires_grad are checked). directions=N checks N\n"
    "random directions per input instead of every element. check_accumulation seeds .grad to catch a backward that\n"
    "assigns (dx = ...) where it must add; per_node checks every recorded op on its own when the whole fails and\n"
    "names the wrong one. The report is truthy when it passes; str(report) says where it does not.";

}  // namespace

void bind_gradcheck(py::module_& m) {
  bind_report_parts(m);
  bind_report(m);
  auto define = [&m](const char* name, Checker checker, const char* doc) {
    m.def(name, [name, checker](const py::function& fn, const py::object& inputs, double eps, double atol, double rtol,
                                std::uint64_t seed, int directions, int max_reported, bool check_accumulation,
                                bool per_node, const std::optional<std::vector<std::string>>& names) {
      return run(checker, name, fn, inputs,
                 make_options(eps, atol, rtol, seed, directions, max_reported, check_accumulation, per_node, names));
    }, py::arg("fn"), py::arg("inputs"), py::kw_only(), py::arg("eps") = 1e-6, py::arg("atol") = 1e-5,
          py::arg("rtol") = 1e-3, py::arg("seed") = 0, py::arg("directions") = 0, py::arg("max_reported") = 10,
          py::arg("check_accumulation") = true, py::arg("per_node") = true, py::arg("names") = py::none(), doc);
  };
  define("gradcheck", run_gradcheck, kGradcheckDoc);
  define("gradcheck_nodes", run_nodes,
         "gradcheck_nodes(fn, inputs, **options) -> GradcheckReport\n\n"
         "Per-node mode on its own: runs fn once and checks every op it recorded on its own, whether or not the "
         "whole passes (report.inputs stays empty). Options as attend.gradcheck.");
}

}  // namespace attend_py
