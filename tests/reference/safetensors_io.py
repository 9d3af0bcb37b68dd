"""Writes and reads safetensors files with the standard library and torch only
(Debian has no python3-safetensors). Used by the reference scripts in this folder.

Format: 8-byte little-endian header length N, N bytes of JSON
{"name": {"dtype": "F32"|"F64"|"I8", "shape": [...], "data_offsets": [begin, end]}, ...,
 "__metadata__": {str: str}}, then the raw little-endian data.
"""
import json
import struct

import torch

_DTYPES = {torch.float32: ("F32", 4), torch.float64: ("F64", 8), torch.int8: ("I8", 1)}
_BACK = {"F32": torch.float32, "F64": torch.float64, "I8": torch.int8}


def save(path, tensors, metadata=None):
    header, blobs, offset = {}, [], 0
    for name in sorted(tensors):
        t = tensors[name].detach().contiguous().cpu()
        code, size = _DTYPES[t.dtype]
        raw = t.numpy().astype(t.numpy().dtype.newbyteorder("<")).tobytes()
        header[name] = {"dtype": code, "shape": list(t.shape), "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)  # keep the data 8-byte aligned
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for raw in blobs:
            f.write(raw)


def load(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + n])
    header.pop("__metadata__", None)
    out = {}
    for name, info in header.items():
        begin, end = info["data_offsets"]
        dtype = _BACK[info["dtype"]]
        t = torch.frombuffer(bytearray(data[8 + n + begin : 8 + n + end]), dtype=dtype)
        out[name] = t.reshape(info["shape"])
    return out
