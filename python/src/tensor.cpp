// attend.Tensor and NumPy: attend.tensor (copies), attend.from_numpy (shares a
// C-contiguous float32/float64 array's memory), Tensor.numpy() (a view that keeps
// the tensor's memory alive), the factories, and attend.Generator.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "bindings.hpp"
#include "core/random.hpp"
#include "core/tensor.hpp"

namespace attend_py {
namespace {

using attend::DType;
using attend::Shape;
using attend::Tensor;

std::string type_name(const py::handle& value) { return py::str(py::type::of(value).attr("__name__")); }

// A reference to a Python object that may be dropped from any thread, with or
// without the GIL (a tensor's storage dies wherever its last handle goes).
std::shared_ptr<void> keep_alive(const py::handle& object) {
  object.inc_ref();
  return std::shared_ptr<void>(object.ptr(), [](void* p) {
    if (!Py_IsInitialized()) return;  // at exit: the interpreter has gone, and the memory with it
    py::gil_scoped_acquire gil;
    Py_DECREF(static_cast<PyObject*>(p));
  });
}

Shape array_shape(const py::array& a, const char* op) {
  if (a.ndim() > attend::kMaxRank) attend::fail("{}: the array has {} axes; attend tensors have at most {}", op, a.ndim(), attend::kMaxRank);
  std::vector<std::int64_t> dims(a.shape(), a.shape() + a.ndim());
  return Shape(std::span<const std::int64_t>(dims));
}

// What attend cannot take from an array, whether it copies or shares it.
void check_array(const py::array& a, const char* op) {
  const char kind = a.dtype().kind();
  if (kind == 'O') attend::fail("{}: an object array (dtype=object) holds Python objects, not numbers; give numbers of one type", op);
  if (kind == 'c') attend::fail("{}: complex numbers are not supported (dtype {})", op, std::string(py::str(a.dtype())));
  if (kind != 'f' && kind != 'i' && kind != 'u' && kind != 'b')
    attend::fail("{}: cannot make a tensor from an array of dtype {}; give float32 or float64 numbers", op,
                 std::string(py::str(a.dtype())));
  if (a.size() == 0) attend::fail("{}: the array is empty (shape {}); attend tensors hold at least one element", op,
                                  std::string(py::str(a.attr("shape"))));
  array_shape(a, op);
}

py::array as_array(const py::handle& data, const char* op) {
  if (data.is_none()) attend::fail("{}: got None, not numbers", op);
  if (py::isinstance<py::str>(data) || py::isinstance<py::bytes>(data))
    attend::fail("{}: got a {}, not numbers", op, type_name(data));
  if (py::isinstance<py::array>(data)) return py::reinterpret_borrow<py::array>(data);
  py::module_ np = py::module_::import("numpy");
  try {
    return np.attr("asarray")(data);
  } catch (py::error_already_set& e) {  // ragged lists, objects numpy cannot read
    attend::fail("{}: cannot read a {} as numbers: {}", op, type_name(data), e.what());
  }
}

Tensor copy_array(const py::array& source, DType dtype, const char* op) {
  check_array(source, op);
  const Shape shape = array_shape(source, op);
  py::module_ np = py::module_::import("numpy");
  py::array a = np.attr("ascontiguousarray")(source, dtype == DType::Float32 ? "float32" : "float64");
  Tensor t = attend::empty(shape, dtype);
  std::memcpy(t.raw_data(), a.data(), static_cast<std::size_t>(t.numel()) * attend::dtype_size(dtype));
  return t;
}

std::optional<DType> float_dtype_of(const py::array& a) {
  if (a.dtype().kind() != 'f') return std::nullopt;
  if (a.itemsize() == 4) return DType::Float32;
  if (a.itemsize() == 8) return DType::Float64;
  return std::nullopt;
}

Tensor tensor_from(const py::object& data, const py::object& dtype, bool requires_grad) {
  constexpr const char* op = "attend.tensor";
  if (py::isinstance<Tensor>(data)) {
    const Tensor& t = data.cast<const Tensor&>();
    Tensor copy = t.to(to_dtype(dtype, t.dtype(), op)).detach().clone();
    if (requires_grad) copy.requires_grad_();
    return copy;
  }
  py::array a = as_array(data, op);
  // An array's float type carries over; lists and numbers are float32, as in PyTorch.
  const bool array = py::isinstance<py::array>(data);
  const DType fallback = array ? float_dtype_of(a).value_or(DType::Float32) : DType::Float32;
  Tensor t = copy_array(a, to_dtype(dtype, fallback, op), op);
  if (requires_grad) t.requires_grad_();
  return t;
}

Tensor from_numpy(const py::object& value, bool requires_grad) {
  constexpr const char* op = "attend.from_numpy";
  if (!py::isinstance<py::array>(value))
    attend::fail("{}: expected a numpy.ndarray, got {} (attend.tensor copies lists and numbers)", op, type_name(value));
  py::array a = py::reinterpret_borrow<py::array>(value);
  check_array(a, op);
  const std::optional<DType> dtype = float_dtype_of(a);
  if (!dtype)
    attend::fail("{}: the array is {}; sharing memory needs float32 or float64 (a.astype(numpy.float32), "
                 "or attend.tensor(a) to copy)", op, std::string(py::str(a.dtype())));
  const Shape shape = array_shape(a, op);
  for (py::ssize_t axis = 0; axis < a.ndim(); ++axis)
    if (a.strides()[axis] < 0)
      attend::fail("{}: the array has a negative stride on axis {} (a reversed view); "
                   "numpy.ascontiguousarray(a) makes a copy attend can share", op, axis);
  if (!(a.flags() & py::array::c_style))
    attend::fail("{}: the array is not C-contiguous (a transposed or sliced view, strides {}); "
                 "numpy.ascontiguousarray(a) makes a copy attend can share", op,
                 std::string(py::str(a.attr("strides"))));
  if (reinterpret_cast<std::uintptr_t>(a.data()) % static_cast<std::uintptr_t>(a.itemsize()) != 0)
    attend::fail("{}: the array's data is not aligned to its {}-byte elements; numpy.array(a) makes an aligned copy",
                 op, a.itemsize());
  if (!a.writeable())
    attend::fail("{}: the array is read-only, and attend writes into shared memory in place (optimizers, fill_); "
                 "pass a.copy()", op);
  auto impl = std::make_shared<attend::TensorImpl>();
  impl->shape = shape;
  impl->dtype = *dtype;
  impl->storage = std::make_shared<attend::Storage>(a.mutable_data(), static_cast<std::size_t>(a.nbytes()),
                                                    keep_alive(a));
  Tensor t(std::move(impl));
  if (requires_grad) t.requires_grad_();
  return t;
}

// The tensor's memory as an array; the array holds the storage (and so the memory) alive.
py::array to_numpy(const Tensor& t) {
  attend::check_defined("Tensor.numpy", t);
  const Shape& shape = t.shape();
  std::vector<py::ssize_t> dims(shape.begin(), shape.end()), strides;
  const auto element_strides = attend::strides_of(shape);
  for (int axis = 0; axis < shape.rank(); ++axis)
    strides.push_back(static_cast<py::ssize_t>(element_strides[axis] * attend::dtype_size(t.dtype())));
  auto* held = new std::shared_ptr<attend::Storage>(t.impl()->storage);
  py::capsule base(held, [](void* p) { delete static_cast<std::shared_ptr<attend::Storage>*>(p); });
  void* data = const_cast<void*>(t.raw_data());
  if (t.dtype() == DType::Float32) return py::array_t<float>(dims, strides, static_cast<float*>(data), base);
  return py::array_t<double>(dims, strides, static_cast<double*>(data), base);
}

py::tuple shape_tuple(const Shape& shape) {
  py::tuple out(shape.rank());
  for (int i = 0; i < shape.rank(); ++i) out[i] = shape[i];
  return out;
}

void bind_generator(py::module_& m) {
  py::class_<attend::Generator>(m, "Generator", "Seeded random numbers, the same on every machine (xoshiro256**).")
      .def(py::init<std::uint64_t>(), py::arg("seed") = 0)
      .def("manual_seed", &attend::Generator::manual_seed, py::arg("seed"), "Starts the sequence afresh from seed.")
      .def("uniform", py::overload_cast<double, double>(&attend::Generator::uniform), py::arg("lo") = 0.0,
           py::arg("hi") = 1.0, "One number in [lo, hi).")
      .def("normal", &attend::Generator::normal, py::arg("mean") = 0.0, py::arg("stddev") = 1.0);
}

void bind_factories(py::module_& m) {
  m.def("tensor", &tensor_from, py::arg("data"), py::arg("dtype") = py::none(), py::arg("requires_grad") = false,
        "tensor(data, dtype=None, requires_grad=False) -> Tensor\n\n"
        "A new tensor holding a copy of data: a number, a (nested) list, a NumPy array (any layout) or a Tensor.\n"
        "dtype: float32 or float64; by default an array's float type, else float32.");
  m.def("from_numpy", &from_numpy, py::arg("array"), py::arg("requires_grad") = false,
        "from_numpy(array, requires_grad=False) -> Tensor\n\n"
        "A tensor sharing the memory of a C-contiguous, aligned, writeable float32 or float64 array (no copy):\n"
        "writes through either show in both, and the tensor keeps the array alive. Any other array is refused\n"
        "with attend.Error saying how to convert it; attend.tensor(array) copies instead.");
  const char* shape_doc = "shape: a tuple of ints (or one int); dtype: float32 (default) or float64";
  m.def("empty", [](const py::object& s, const py::object& d) { return attend::empty(to_shape(s, "attend.empty"), to_dtype(d, DType::Float32, "attend.empty")); },
        py::arg("shape"), py::arg("dtype") = py::none(), shape_doc);
  m.def("zeros", [](const py::object& s, const py::object& d) { return attend::zeros(to_shape(s, "attend.zeros"), to_dtype(d, DType::Float32, "attend.zeros")); },
        py::arg("shape"), py::arg("dtype") = py::none(), shape_doc);
  m.def("ones", [](const py::object& s, const py::object& d) { return attend::ones(to_shape(s, "attend.ones"), to_dtype(d, DType::Float32, "attend.ones")); },
        py::arg("shape"), py::arg("dtype") = py::none(), shape_doc);
  m.def("full", [](const py::object& s, double v, const py::object& d) { return attend::full(to_shape(s, "attend.full"), v, to_dtype(d, DType::Float32, "attend.full")); },
        py::arg("shape"), py::arg("value"), py::arg("dtype") = py::none(), shape_doc);
  m.def("zeros_like", &attend::zeros_like, py::arg("t"));
  m.def("empty_like", &attend::empty_like, py::arg("t"));
  m.def("scalar", [](double v, const py::object& d) { return attend::scalar(v, to_dtype(d, DType::Float32, "attend.scalar")); },
        py::arg("value"), py::arg("dtype") = py::none(), "A rank-0 tensor.");
  m.def("arange", [](std::int64_t n, const py::object& d) { return attend::arange(n, to_dtype(d, DType::Float32, "attend.arange")); },
        py::arg("n"), py::arg("dtype") = py::none(), "0, 1, ..., n-1");
  m.def("uniform", [](const py::object& s, double lo, double hi, attend::Generator& gen, const py::object& d) {
          return attend::uniform(to_shape(s, "attend.uniform"), lo, hi, gen, to_dtype(d, DType::Float32, "attend.uniform"));
        }, py::arg("shape"), py::arg("lo"), py::arg("hi"), py::arg("gen"), py::arg("dtype") = py::none());
  m.def("normal", [](const py::object& s, double mean, double stddev, attend::Generator& gen, const py::object& d) {
          return attend::normal(to_shape(s, "attend.normal"), mean, stddev, gen, to_dtype(d, DType::Float32, "attend.normal"));
        }, py::arg("shape"), py::arg("mean"), py::arg("stddev"), py::arg("gen"), py::arg("dtype") = py::none());
  m.def("equal", &attend::equal, py::arg("a"), py::arg("b"), "Exactly equal shape, dtype and values.");
  m.def("allclose", &attend::allclose, py::arg("a"), py::arg("b"), py::arg("rtol") = 1e-5, py::arg("atol") = 1e-8,
        "|a - b| <= atol + rtol * |b| everywhere (shapes equal).");
  m.def("max_abs_diff", &attend::max_abs_diff, py::arg("a"), py::arg("b"));
}

void bind_tensor_class(py::module_& m) {
  py::class_<Tensor> cls(m, "Tensor",
                         "An N-d array of float32 or float64 (rank 0 to 6), and what autograd records.\n"
                         "A Tensor is a handle: copies share the data, like PyTorch's.");
  cls.attr("__array_ufunc__") = py::none();  // array + tensor defers to Tensor.__radd__: a tensor, not an array
  cls.def_property_readonly("shape", [](const Tensor& t) { return shape_tuple(t.shape()); }, "The sizes, a tuple.")
      .def_property_readonly("dtype", &Tensor::dtype, "attend.float32 or attend.float64")
      .def_property_readonly("ndim", &Tensor::dim)
      .def("dim", &Tensor::dim)
      .def("numel", &Tensor::numel)
      .def("size", &Tensor::size, py::arg("axis"), "The size of one axis (negative counts from the end).")
      .def("__len__", [](const Tensor& t) {
        if (t.dim() == 0) throw py::type_error("len() of a rank-0 tensor");
        return t.size(0);
      })
      .def("item", &Tensor::item, "The single element of a one-element tensor, as a float.")
      .def("tolist", [](const Tensor& t) { return to_numpy(t).attr("tolist")(); })
      .def("numpy", &to_numpy,
           "numpy() -> numpy.ndarray\n\nA view of the tensor's memory (no copy): writes show in both, and the view "
           "keeps the memory alive after the tensor is gone.")
      .def("__array__", [](const Tensor& t, const py::object& dtype) {
        py::array a = to_numpy(t);
        return dtype.is_none() ? a : py::array(a.attr("astype")(dtype));
      }, py::arg("dtype") = py::none())
      .def("clone", &Tensor::clone, "A copy of the data, outside any graph.")
      .def("detach", &Tensor::detach, "Shares the data, cut off from the graph.")
      .def("to", [](const Tensor& t, const py::object& d) { return t.to(to_dtype(d, t.dtype(), "Tensor.to")); },
           py::arg("dtype"), "A converted copy (the same tensor when the dtype matches).")
      .def("fill_", &Tensor::fill_, py::arg("value"), py::return_value_policy::reference_internal)
      .def("zero_", &Tensor::zero_, py::return_value_policy::reference_internal)
      .def("copy_", &Tensor::copy_, py::arg("src"), py::return_value_policy::reference_internal,
           "Copies src's values in (same shape and dtype); not recorded by autograd.")
      .def("add_", &Tensor::add_, py::arg("other"), py::arg("alpha") = 1.0, py::return_value_policy::reference_internal,
           "self += alpha * other, in place and not recorded: how a CustomOp backward adds into g.dx(i).")
      .def("mul_", &Tensor::mul_, py::arg("factor"), py::return_value_policy::reference_internal)
      .def("__iadd__", [](Tensor& t, const Tensor& other) { return t.add_(other); }, py::arg("other"),
           py::return_value_policy::reference_internal, "In place, not recorded (as C++'s dx += dy).")
      .def_property_readonly("requires_grad", &Tensor::requires_grad)
      .def("requires_grad_", &Tensor::requires_grad_, py::arg("on") = true, py::return_value_policy::reference_internal,
           "Marks a leaf as taking gradient; returns the tensor.")
      .def_property_readonly("is_leaf", &Tensor::is_leaf)
      .def_property("grad", [](const Tensor& t) -> py::object {
        Tensor g = t.grad();
        return g.defined() ? py::cast(g) : py::none();
      }, [](Tensor& t, const py::object& g) { t.set_grad(g.is_none() ? Tensor() : g.cast<Tensor>()); },
          "The gradient a backward accumulated into this leaf; None until one reaches it.")
      .def("zero_grad", &Tensor::zero_grad, "Drops the accumulated gradient (grad becomes None).")
      .def("backward", [](const Tensor& t, const py::object& grad, bool retain_graph) {
        Tensor g = grad.is_none() ? Tensor() : to_tensor(grad, t.dtype(), "Tensor.backward", "grad");
        run_released(true, [&] { t.backward(g, retain_graph); });
      }, py::arg("grad") = py::none(), py::arg("retain_graph") = false,
           "backward(grad=None, retain_graph=False)\n\nAccumulates d(self)/d(leaf) into every leaf's .grad; grad "
           "defaults to 1 for a one-element tensor.")
      .def("same", &Tensor::same, py::arg("other"), "Whether both handles hold the same tensor.")
      .def("__repr__", &Tensor::str)
      .def("__str__", &Tensor::str);
}

}  // namespace

DType to_dtype(const py::handle& dtype, DType fallback, const char* op) {
  if (dtype.is_none()) return fallback;
  if (py::isinstance<DType>(dtype)) return dtype.cast<DType>();
  std::string name;
  try {
    name = py::str(py::module_::import("numpy").attr("dtype")(dtype).attr("name"));
  } catch (py::error_already_set&) {
    attend::fail("{}: dtype {} is not a dtype; use attend.float32 or attend.float64", op, std::string(py::repr(dtype)));
  }
  if (name == "float32") return DType::Float32;
  if (name == "float64") return DType::Float64;
  attend::fail("{}: attend tensors are float32 or float64, not {}", op, name);
}

Tensor to_tensor(const py::handle& value, DType fallback, const char* op, const char* what) {
  if (py::isinstance<Tensor>(value)) return value.cast<Tensor>();
  if (value.is_none()) attend::fail("{}: {} is None, not a tensor", op, what);
  py::array a = as_array(value, op);
  const bool array = py::isinstance<py::array>(value);
  return copy_array(a, array ? float_dtype_of(a).value_or(fallback) : fallback, op);
}

attend::Indices to_indices(const py::handle& value, const char* op, const char* what) {
  if (value.is_none()) attend::fail("{}: {} is None, not indices", op, what);
  if (py::isinstance<Tensor>(value)) attend::fail("{}: {} must be integers (a list or an integer array), not a Tensor", op, what);
  py::array a = as_array(value, op);
  const char kind = a.dtype().kind();
  if (kind != 'i' && kind != 'u')
    attend::fail("{}: {} must be integers, got an array of {}", op, what, std::string(py::str(a.dtype())));
  const Shape shape = array_shape(a, op);
  py::array_t<std::int64_t, py::array::c_style | py::array::forcecast> ints(a);
  std::vector<std::int64_t> values(ints.data(), ints.data() + ints.size());
  return attend::Indices(std::move(values), shape);
}

Shape to_shape(const py::handle& value, const char* op) {
  if (py::isinstance<py::int_>(value)) return Shape({value.cast<std::int64_t>()});
  if (!py::isinstance<py::tuple>(value) && !py::isinstance<py::list>(value))
    attend::fail("{}: a shape is a tuple of ints, not {}", op, type_name(value));
  std::vector<std::int64_t> dims;
  for (const py::handle& d : value) {
    if (!py::isinstance<py::int_>(d)) attend::fail("{}: a shape holds ints, not {}", op, type_name(d));
    try {
      dims.push_back(d.cast<std::int64_t>());
    } catch (py::cast_error&) {
      attend::fail("{}: dimension {} does not fit in 64 bits", op, std::string(py::str(d)));
    }
  }
  return Shape(std::span<const std::int64_t>(dims));
}

void bind_tensor(py::module_& m) {
  py::enum_<DType>(m, "DType", "The element types: float32 (training) and float64 (gradient checks).")
      .value("float32", DType::Float32)
      .value("float64", DType::Float64)
      .export_values();
  bind_generator(m);
  bind_tensor_class(m);
  bind_factories(m);
}

}  // namespace attend_py
