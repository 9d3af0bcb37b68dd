"""Dynamic int8 quantization for the PyTorch twins (bench/torch_decode.py --int8),
as a PyTorch user does it: torch.ao.quantization.quantize_dynamic on every
nn.LSTM, nn.LSTMCell and nn.Linear, to torch.qint8. Weights become int8 (one
scale per tensor, PyTorch's default dynamic qconfig), and each product quantizes
its input activations to uint8 as it runs, then multiplies in integers.

The engine that runs those products is a global setting, read when the weights
are packed, so it is chosen before quantize_dynamic. Debian's torch 1.13 is built
without fbgemm; it has oneDNN (JIT kernels for the CPU's widest vectors, VNNI
included) and qnnpack (written for ARM, slower on x86).
"""
import ctypes

import torch
import torch.nn as nn
from torch.ao.quantization import quantize_dynamic

# The engines by speed on x86, fastest first: fbgemm and x86 (absent from
# Debian's 1.13), then oneDNN; qnnpack's x86 code is the slowest.
ENGINES_BY_SPEED = ("fbgemm", "x86", "onednn", "qnnpack")
# The modules quantize_dynamic replaces; any left in float after it is a product the twin still does in float32.
FLOAT_TYPES = (nn.LSTM, nn.LSTMCell, nn.Linear)
# oneDNN 2.x's dnnl_cpu_isa_t values (dnnl_types.h); any VNNI one multiplies int8 with VNNI instructions.
ONEDNN_ISAS = {0x1: "sse41", 0x3: "avx", 0x7: "avx2", 0x27: "avx512_core", 0x67: "avx512_core_vnni",
               0xe7: "avx512_core_bf16 (with VNNI)", 0x3e7: "avx512_core_amx (with VNNI)", 0x407: "avx2_vnni"}


def pick_engine(asked):
    """The quantized engine: `asked` if given (and supported), else the fastest one supported on x86."""
    supported = [e for e in torch.backends.quantized.supported_engines if e != "none"]
    if asked:
        if asked not in supported:
            raise SystemExit(f"--qengine {asked}: this torch supports {', '.join(supported)}")
        return asked
    for engine in ENGINES_BY_SPEED:
        if engine in supported:
            return engine
    raise SystemExit(f"no quantized engine for x86 in this torch (it has {', '.join(supported)})")


def onednn_info():
    """oneDNN's version and the instruction set its kernels use here, as far as its C API tells."""
    with open("/proc/self/maps") as maps:
        paths = {line.split()[-1] for line in maps if "libdnnl" in line.rsplit("/", 1)[-1]}
    if not paths:
        return "oneDNN built into torch (ISA not known)"
    dnnl = ctypes.CDLL(sorted(paths)[0])

    class Version(ctypes.Structure):
        _fields_ = [("major", ctypes.c_int), ("minor", ctypes.c_int), ("patch", ctypes.c_int)]

    dnnl.dnnl_version.restype = ctypes.POINTER(Version)
    v = dnnl.dnnl_version().contents
    isa = dnnl.dnnl_get_effective_cpu_isa()
    name = ONEDNN_ISAS.get(isa, hex(isa)) if v.major == 2 else hex(isa)
    return f"oneDNN {v.major}.{v.minor}.{v.patch}, ISA {name}"


def is_dynamic_int8(module):
    """Whether module is one of quantize_dynamic's replacements, holding qint8 weights."""
    return type(module).__module__.startswith(("torch.ao.nn.quantized.dynamic", "torch.nn.quantized.dynamic"))


def quantize(model, engine):
    """model with its LSTMs, LSTM cells and linears quantized dynamically on `engine`, and the lines
    (for a '#' comment) that say what was quantized; stops if a float one is left."""
    float_ones = [name for name, m in model.named_modules() if type(m) in FLOAT_TYPES]
    torch.backends.quantized.engine = engine
    quantized = quantize_dynamic(model, set(FLOAT_TYPES), dtype=torch.qint8)
    modules = dict(quantized.named_modules())
    left = [name for name in float_ones if not is_dynamic_int8(modules[name])]
    if left or not float_ones:
        raise SystemExit(f"quantize_dynamic left {', '.join(left) or 'nothing to quantize'} in float32")
    done = ", ".join(f"{name} {type(modules[name]).__name__}" for name in float_ones)
    supported = ", ".join(e for e in torch.backends.quantized.supported_engines if e != "none")
    detail = f"; {onednn_info()}" if engine == "onednn" else ""
    bmm = " and the attention's bmm (context; dot and general scores)" if hasattr(model, "attention") else ""
    return quantized, [
        f"int8: quantize_dynamic to qint8 (weights per tensor, activations quantized at each product), "
        f"engine {engine} (supported: {supported}){detail}",
        f"int8 modules (torch.ao.nn.quantized.dynamic): {done}; float32: the embeddings (lookups){bmm}",
    ]
