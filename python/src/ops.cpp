// Every op of autograd/ops.hpp under its C++ name (attend.matmul, attend.softmax,
// ...), the Python operators (+ - * / @, unary -), and the same ops as Tensor
// methods where PyTorch has them (t.sum(), t.tanh(), t.reshape(...)).
// A Python number or array mixed with a tensor becomes a tensor of that tensor's dtype.
#include <pybind11/functional.h>
#include <pybind11/stl.h>

#include <functional>
#include <vector>

#include "autograd/ops.hpp"
#include "bindings.hpp"

namespace attend_py {
namespace {

using attend::Tensor;
using attend::Tensors;

bool large(std::initializer_list<const Tensor*> tensors) {
  std::int64_t n = 0;
  for (const Tensor* t : tensors)
    if (t->defined()) n += t->numel();
  return n >= kReleaseGilElements;
}

bool is_number(const py::handle& v) {
  return py::isinstance<py::float_>(v) || (py::isinstance<py::int_>(v) && !py::isinstance<py::bool_>(v));
}

// a OP b where either side may be a number or array-like, as long as one is a Tensor.
using TensorOp = Tensor (*)(const Tensor&, const Tensor&);
Tensor apply(TensorOp f, const Tensor& a, const Tensor& b) {
  return run_released(large({&a, &b}), [&] { return f(a, b); });
}

Tensor binary(const char* op, TensorOp f, const py::handle& a, const py::handle& b) {
  const bool a_tensor = py::isinstance<Tensor>(a), b_tensor = py::isinstance<Tensor>(b);
  if (!a_tensor && !b_tensor) attend::fail("attend.{}: one of the arguments must be a Tensor", op);
  const attend::DType dtype = (a_tensor ? a : b).cast<const Tensor&>().dtype();
  return apply(f, to_tensor(a, dtype, op, "a"), to_tensor(b, dtype, op, "b"));
}

Tensor add_tt(const Tensor& a, const Tensor& b) { return attend::add(a, b); }
Tensor sub_tt(const Tensor& a, const Tensor& b) { return attend::sub(a, b); }
Tensor mul_tt(const Tensor& a, const Tensor& b) { return attend::mul(a, b); }
Tensor div_tt(const Tensor& a, const Tensor& b) { return attend::div(a, b); }
Tensor matmul_tt(const Tensor& a, const Tensor& b) { return attend::matmul(a, b); }

// The other operand of an operator: a Tensor as it is, an array or list as a
// tensor of self's dtype.
Tensor operand(const Tensor& self, const py::object& other, const char* op) {
  if (py::isinstance<Tensor>(other)) return other.cast<Tensor>();
  return to_tensor(other, self.dtype(), op, "the other operand");
}

// The operators call the scalar overloads for numbers, as C++'s x * 2.0 does, so
// that the same expression gives the same bits in both languages.
void bind_operators(py::class_<Tensor>& cls) {
  cls.def("__add__", [](const Tensor& x, const py::object& o) {
       return is_number(o) ? attend::add(x, o.cast<double>()) : apply(add_tt, x, operand(x, o, "add"));
     }, py::is_operator())
      .def("__radd__", [](const Tensor& x, const py::object& o) {
        return is_number(o) ? attend::add(x, o.cast<double>()) : apply(add_tt, operand(x, o, "add"), x);
      }, py::is_operator())
      .def("__sub__", [](const Tensor& x, const py::object& o) {
        return is_number(o) ? x - o.cast<double>() : apply(sub_tt, x, operand(x, o, "sub"));
      }, py::is_operator())
      .def("__rsub__", [](const Tensor& x, const py::object& o) {
        return is_number(o) ? o.cast<double>() - x : apply(sub_tt, operand(x, o, "sub"), x);
      }, py::is_operator())
      .def("__mul__", [](const Tensor& x, const py::object& o) {
        return is_number(o) ? attend::mul(x, o.cast<double>()) : apply(mul_tt, x, operand(x, o, "mul"));
      }, py::is_operator())
      .def("__rmul__", [](const Tensor& x, const py::object& o) {
        return is_number(o) ? attend::mul(x, o.cast<double>()) : apply(mul_tt, operand(x, o, "mul"), x);
      }, py::is_operator())
      .def("__truediv__", [](const Tensor& x, const py::object& o) {
        return is_number(o) ? x / o.cast<double>() : apply(div_tt, x, operand(x, o, "div"));
      }, py::is_operator())
      .def("__rtruediv__", [](const Tensor& x, const py::object& o) { return apply(div_tt, operand(x, o, "div"), x); },
           py::is_operator())
      .def("__matmul__", [](const Tensor& a, const py::object& o) { return apply(matmul_tt, a, operand(a, o, "matmul")); },
           py::is_operator())
      .def("__rmatmul__", [](const Tensor& b, const py::object& o) { return apply(matmul_tt, operand(b, o, "matmul"), b); },
           py::is_operator())
      .def("__neg__", [](const Tensor& x) { return attend::neg(x); });
}

using Unary = Tensor (*)(const Tensor&);
void unary(py::module_& m, py::class_<Tensor>& cls, const char* name, Unary f, const char* doc) {
  auto run = [f](const Tensor& x) { return run_released(large({&x}), [&] { return f(x); }); };
  m.def(name, run, py::arg("x"), doc);
  cls.def(name, run, doc);
}

void bind_elementwise(py::module_& m, py::class_<Tensor>& cls) {
  const char* bdoc = "Element-wise, with NumPy broadcasting; a or b may be a number or an array.";
  m.def("add", [](const py::object& a, const py::object& b) { return binary("add", add_tt, a, b); }, py::arg("a"), py::arg("b"), bdoc);
  m.def("sub", [](const py::object& a, const py::object& b) { return binary("sub", sub_tt, a, b); }, py::arg("a"), py::arg("b"), bdoc);
  m.def("mul", [](const py::object& a, const py::object& b) { return binary("mul", mul_tt, a, b); }, py::arg("a"), py::arg("b"), bdoc);
  m.def("div", [](const py::object& a, const py::object& b) { return binary("div", div_tt, a, b); }, py::arg("a"), py::arg("b"), bdoc);
  unary(m, cls, "neg", [](const Tensor& x) { return attend::neg(x); }, "y = -x   dx += -dy");
  unary(m, cls, "tanh", [](const Tensor& x) { return attend::tanh(x); }, "y = tanh(x)   dx += dy * (1 - y*y)");
  unary(m, cls, "sigmoid", [](const Tensor& x) { return attend::sigmoid(x); }, "y = 1 / (1 + exp(-x))   dx += dy * y * (1 - y)");
  unary(m, cls, "relu", [](const Tensor& x) { return attend::relu(x); }, "y = max(x, 0)   dx += dy * (x > 0)");
  unary(m, cls, "exp", [](const Tensor& x) { return attend::exp(x); }, "y = exp(x)   dx += dy * y");
  unary(m, cls, "log", [](const Tensor& x) { return attend::log(x); }, "y = log(x)   dx += dy / x");
}

void bind_linear_algebra(py::module_& m) {
  m.def("matmul", [](const Tensor& a, const Tensor& b) {
    return run_released(large({&a, &b}), [&] { return attend::matmul(a, b); });
  }, py::arg("a"), py::arg("b"), "(M, K) @ (K, N) -> (M, N); (B, M, K) @ (B, K, N) or (K, N) -> (B, M, N)");
  m.def("linear", [](const Tensor& x, const Tensor& weight, const std::optional<Tensor>& bias) {
    const Tensor b = bias.value_or(Tensor());
    return run_released(large({&x, &weight}), [&] { return attend::linear(x, weight, b); });
  }, py::arg("x"), py::arg("weight"), py::arg("bias") = py::none(),
        "y = x @ weight^T + bias: x (..., I), weight (O, I), bias (O) or None -> (..., O)");
}

void bind_shape_ops(py::module_& m, py::class_<Tensor>& cls) {
  auto reshape = [](const Tensor& x, const py::object& shape) { return attend::reshape(x, to_shape(shape, "reshape")); };
  m.def("reshape", reshape, py::arg("x"), py::arg("shape"), "Same number of elements; shares the data.");
  cls.def("reshape", reshape, py::arg("shape"));
  m.def("transpose", &attend::transpose, py::arg("x"), py::arg("axis0"), py::arg("axis1"));
  cls.def("transpose", &attend::transpose, py::arg("axis0"), py::arg("axis1"));
  m.def("concat", &attend::concat, py::arg("xs"), py::arg("axis"));
  m.def("stack", &attend::stack, py::arg("xs"), py::arg("axis"), "Joins along a new axis.");
  m.def("slice", &attend::slice, py::arg("x"), py::arg("axis"), py::arg("start"), py::arg("end"), "x[start:end] along axis.");
  m.def("index_select", [](const Tensor& table, const py::object& indices) {
    return attend::index_select(table, to_indices(indices, "index_select", "indices"));
  }, py::arg("table"), py::arg("indices"), "Rows of table (N, D) -> (indices..., D); the backward scatter-adds.");
}

void bind_reductions(py::module_& m, py::class_<Tensor>& cls) {
  auto sum = [](const Tensor& x, std::optional<int> axis, bool keepdim) {
    return run_released(large({&x}), [&] { return axis ? attend::sum(x, *axis, keepdim) : attend::sum(x); });
  };
  auto mean = [](const Tensor& x, std::optional<int> axis, bool keepdim) {
    return run_released(large({&x}), [&] { return axis ? attend::mean(x, *axis, keepdim) : attend::mean(x); });
  };
  m.def("sum", sum, py::arg("x"), py::arg("axis") = py::none(), py::arg("keepdim") = false,
        "Of every element (rank 0), or along axis.");
  cls.def("sum", sum, py::arg("axis") = py::none(), py::arg("keepdim") = false);
  m.def("mean", mean, py::arg("x"), py::arg("axis") = py::none(), py::arg("keepdim") = false);
  cls.def("mean", mean, py::arg("axis") = py::none(), py::arg("keepdim") = false);
}

void bind_softmax_and_losses(py::module_& m, py::class_<Tensor>& cls) {
  m.def("softmax", &attend::softmax, py::arg("x"), py::arg("axis"));
  cls.def("softmax", &attend::softmax, py::arg("axis"));
  m.def("log_softmax", &attend::log_softmax, py::arg("x"), py::arg("axis"));
  cls.def("log_softmax", &attend::log_softmax, py::arg("axis"));
  m.def("masked_softmax", &attend::masked_softmax, py::arg("x"), py::arg("mask"), py::arg("axis"),
        "Softmax where mask is 1; masked positions get weight and gradient exactly 0.");
  m.def("masked_fill", &attend::masked_fill, py::arg("x"), py::arg("mask"), py::arg("value"));
  m.def("cross_entropy", [](const Tensor& logits, const py::object& targets, std::int64_t ignore_index, double smoothing) {
    return attend::cross_entropy(logits, to_indices(targets, "cross_entropy", "targets"), ignore_index, smoothing);
  }, py::arg("logits"), py::arg("targets"), py::arg("ignore_index") = -100, py::arg("label_smoothing") = 0.0,
        "logits (N, V), targets N ints: the mean loss over targets that are not ignore_index.");
  m.def("linear_cross_entropy", [](const Tensor& h, const Tensor& weight, const std::optional<Tensor>& bias,
                                   const py::object& targets, std::int64_t ignore_index, double smoothing) {
    const attend::Indices t = to_indices(targets, "linear_cross_entropy", "targets");
    const Tensor b = bias.value_or(Tensor());
    return run_released(large({&h, &weight}), [&] {
      return attend::linear_cross_entropy(h, weight, b, t, ignore_index, smoothing);
    });
  }, py::arg("h"), py::arg("weight"), py::arg("bias"), py::arg("targets"), py::arg("ignore_index") = -100,
        py::arg("label_smoothing") = 0.0, "cross_entropy(linear(h, weight, bias), targets) without storing the logits.");
}

void bind_hooks(py::module_& m) {
  m.def("tap", [](const Tensor& x, const py::function& on_grad) {
    std::shared_ptr<py::function> held(new py::function(on_grad), [](py::function* f) {
      py::gil_scoped_acquire gil;
      delete f;
    });
    return attend::tap(x, [held](const Tensor& dy) {
      py::gil_scoped_acquire gil;
      (*held)(dy.detach().clone());
    });
  }, py::arg("x"), py::arg("on_grad"), "The identity; on_grad(dy) is called with the gradient passing through.");
  m.def("dropout", &attend::dropout, py::arg("x"), py::arg("p"), py::arg("training"), py::arg("gen"),
        "Zeroes each element with probability p and scales the rest by 1/(1-p); x itself when not training.");
}

}  // namespace

void bind_ops(py::module_& m) {
  auto cls = py::reinterpret_borrow<py::class_<Tensor>>(m.attr("Tensor"));
  bind_operators(cls);
  bind_elementwise(m, cls);
  bind_linear_algebra(m);
  bind_shape_ops(m, cls);
  bind_reductions(m, cls);
  bind_softmax_and_losses(m, cls);
  bind_hooks(m);
}

}  // namespace attend_py
