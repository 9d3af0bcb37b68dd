"""Writes tests/data/interop.safetensors with torch (through safetensors_io.py), so
that test_safetensors.cpp checks attend's reader on a file it did not write.

    /usr/bin/python3 tests/reference/make_interop.py            # (re)write the file
    /usr/bin/python3 tests/reference/make_interop.py --check F  # read a file attend wrote

--check applies the Python safetensors package's own validation rules (header at
most 100 MB, offsets sorted and contiguous from 0, covering the data section to
the last byte, sizes matching shape x dtype; Debian has no python3-safetensors to
call) and then reads the tensors with torch and prints them.
"""
import json
import os
import struct
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_io  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "data", "interop.safetensors")


def make():
    tensors = {
        # float32: exact values, then ones that float32 rounds (the test compares with 0.1f etc.)
        "encoder.weight": torch.tensor([[0.5, -1.25, 3.0], [0.1, -2.0 / 3.0, 1e-3]], dtype=torch.float32),
        # float64: values that need all 53 bits
        "decoder.bias": torch.tensor([0.1, 1.0 / 3.0, -2.5e-300, 12345.678], dtype=torch.float64),
        "step": torch.tensor(7.0, dtype=torch.float64),  # rank 0
        "empty": torch.zeros((0, 3), dtype=torch.float32),
        "cube": torch.arange(24, dtype=torch.float32).reshape(2, 3, 4) - 11.5,
    }
    metadata = {"format": "pt", "written_by": "make_interop.py", "unicode": "h\u00e9llo \u2713"}
    safetensors_io.save(OUT, tensors, metadata)
    print(f"wrote {os.path.normpath(OUT)} ({os.path.getsize(OUT)} bytes)")


def check(path):
    with open(path, "rb") as f:
        data = f.read()
    assert len(data) >= 8, "fewer than 8 bytes"
    (n,) = struct.unpack("<Q", data[:8])
    assert n <= 100_000_000 and 8 + n <= len(data), "bad header length"
    header = json.loads(data[8 : 8 + n].decode("utf-8"))
    metadata = header.pop("__metadata__", None)
    assert metadata is None or all(isinstance(v, str) for v in metadata.values())
    sizes = {"F32": 4, "F64": 8}
    covered = 0
    for name, info in sorted(header.items(), key=lambda kv: tuple(kv[1]["data_offsets"])):
        begin, end = info["data_offsets"]
        assert begin == covered, f"{name}: offsets not contiguous"
        numel = 1
        for d in info["shape"]:
            numel *= d
        assert end - begin == numel * sizes[info["dtype"]], f"{name}: size mismatch"
        assert begin % sizes[info["dtype"]] == 0 and (8 + n) % 8 == 0, f"{name}: misaligned"
        covered = end
    assert 8 + n + covered == len(data), "data not covered to the end"
    dtypes = {"F32": torch.float32, "F64": torch.float64}
    for name, info in sorted(header.items()):
        begin, end = info["data_offsets"]
        raw = bytearray(data[8 + n + begin : 8 + n + end])
        # (safetensors_io.load cannot read empty tensors: torch.frombuffer refuses empty buffers)
        flat = torch.frombuffer(raw, dtype=dtypes[info["dtype"]]) if raw else torch.zeros(0, dtype=dtypes[info["dtype"]])
        t = flat.reshape(info["shape"])
        print(name, t.dtype, list(t.shape), t.flatten().tolist())
    print("metadata", metadata)
    print("ok")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--check":
        check(sys.argv[2])
    else:
        make()
