"""Reads an int8 model's weights file (models/quantize/quantize.hpp) with the
standard library and NumPy alone, and checks it against the same model's
dequantized parameters saved as plain F32 by attend:
    NAME (I8, (n, k)) * NAME.scale (F32, (n))[:, None] == NAME in the F32 file, bit for bit,
and every other tensor equal. With torch installed, reads the I8 arrays with
torch too (safetensors_io.load). Exits 0 when all agree, 1 naming the first
difference, 77 without NumPy.
    int8_numpy.py INT8_FILE FLOAT_FILE
"""
import json
import struct
import sys

try:
    import numpy as np
except ImportError:
    print("SKIPPED: no numpy (apt-get install python3-numpy)")
    sys.exit(77)

_NP = {"F32": np.float32, "F64": np.float64, "I8": np.int8}


def read(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + n])
    meta = header.pop("__metadata__", {})
    out = {}
    for name, info in header.items():
        begin, end = info["data_offsets"]
        dtype = np.dtype(_NP[info["dtype"]]).newbyteorder("<")
        out[name] = np.frombuffer(data[8 + n + begin : 8 + n + end], dtype=dtype).reshape(info["shape"])
    return out, meta


def main():
    int8, meta = read(sys.argv[1])
    plain, _ = read(sys.argv[2])
    if meta.get("weights") != "int8":
        print(f"metadata 'weights' is {meta.get('weights')!r}, not 'int8'")
        return 1
    matrices = 0
    for name, value in plain.items():
        if name in int8 and int8[name].dtype == np.int8:
            q, scale = int8[name], int8[name + ".scale"]
            if q.min() < -127:
                print(f"{name}: holds {q.min()}")
                return 1
            dequantized = q.astype(np.float32) * scale[:, None]
            if not np.array_equal(dequantized, value):
                print(f"{name}: I8 * scale differs from the dequantized parameter by {np.abs(dequantized - value).max()}")
                return 1
            matrices += 1
        elif not np.array_equal(int8.get(name), value):
            print(f"{name}: differs between the two files")
            return 1
    if matrices == 0:
        print("no I8 weight matrix found")
        return 1
    try:
        import torch  # noqa: F401

        sys.path.insert(0, __file__.rsplit("/", 1)[0])
        import safetensors_io

        for name, t in safetensors_io.load(sys.argv[1]).items():
            if not np.array_equal(t.numpy(), int8[name]):
                print(f"{name}: torch reads other values than NumPy")
                return 1
    except ImportError:
        pass
    print(f"{matrices} int8 matrices read by NumPy equal attend's dequantized weights")
    return 0


if __name__ == "__main__":
    sys.exit(main())
