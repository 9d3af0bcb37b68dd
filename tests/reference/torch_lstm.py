"""Reference values for tests/layers/lstm/test_lstm_cell.cpp and tests/layers/lstm/test_lstm.cpp from
PyTorch's nn.LSTMCell and nn.LSTM. Run with Debian's Python, which has torch:

    /usr/bin/python3 tests/reference/torch_lstm.py

Writes tests/data/lstm_cell_{f64,f32}.safetensors and lstm_{f64,f32}.safetensors:
the module's parameters under PyTorch's names (so the tests load them with
load_state_dict), the inputs, the random upstream gradients R*, the outputs,
and "grad.<name>" for the gradient of every input and parameter of

    loss = sum(h * R_h) + sum(c * R_c)                                   (cell)
    loss = sum(out * R_out) + sum(h_n * R_h) + sum(c_n * R_c)            (LSTM)

The LSTM is 2 layers, bidirectional, batch_first, run on variable-length
sequences through pack_padded_sequence (lengths unsorted, including 1 and the
full T, enforce_sorted=False) and padded back to T steps. Every value is drawn
once in float64; the float32 file holds the same inputs rounded to float32 and
PyTorch's float32 results for them.
"""
import os

import torch
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

import safetensors_io

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "data")


def grads_of(named):
    return {"grad." + name: t.grad.detach().clone() for name, t in named.items()}


def run_cell(state, inputs, dtype):
    I, H = state["weight_ih"].shape[1], state["weight_hh"].shape[1]
    cell = torch.nn.LSTMCell(I, H).to(dtype)
    cell.load_state_dict({k: v.to(dtype) for k, v in state.items()})
    x, h0, c0 = (inputs[k].detach().to(dtype).requires_grad_() for k in ("x", "h0", "c0"))
    h, c = cell(x, (h0, c0))
    loss = (h * inputs["R_h"].to(dtype)).sum() + (c * inputs["R_c"].to(dtype)).sum()
    loss.backward()
    out = {k: v.to(dtype) for k, v in {**state, **inputs}.items()}
    out.update({"h": h, "c": c})
    out.update(grads_of({"x": x, "h0": h0, "c0": c0, **dict(cell.named_parameters())}))
    return out


def run_lstm(state, inputs, lengths, layers, dtype):
    I, H = state["weight_ih_l0"].shape[1], state["weight_hh_l0"].shape[1]
    lstm = torch.nn.LSTM(I, H, num_layers=layers, bidirectional=True, batch_first=True).to(dtype)
    lstm.load_state_dict({k: v.to(dtype) for k, v in state.items()})
    x, h0, c0 = (inputs[k].detach().to(dtype).requires_grad_() for k in ("x", "h0", "c0"))
    T = x.shape[1]
    packed = pack_padded_sequence(x, torch.tensor(lengths), batch_first=True, enforce_sorted=False)
    out_packed, (h_n, c_n) = lstm(packed, (h0, c0))
    out, _ = pad_packed_sequence(out_packed, batch_first=True, total_length=T)
    loss = (out * inputs["R_out"].to(dtype)).sum() + (h_n * inputs["R_h"].to(dtype)).sum() + (
        c_n * inputs["R_c"].to(dtype)
    ).sum()
    loss.backward()
    result = {k: v.to(dtype) for k, v in {**state, **inputs}.items()}
    result.update({"out": out, "h_n": h_n, "c_n": c_n, "lengths": torch.tensor(lengths, dtype=dtype)})
    result.update(grads_of({"x": x, "h0": h0, "c0": c0, **dict(lstm.named_parameters())}))
    return result


def main():
    torch.manual_seed(20240601)
    f64 = torch.float64

    # LSTMCell: B = 3, I = 3, H = 4
    B, I, H = 3, 3, 4
    cell = torch.nn.LSTMCell(I, H).to(f64)
    cell_state = {k: v.detach().clone() for k, v in cell.state_dict().items()}
    cell_inputs = {
        "x": torch.randn(B, I, dtype=f64),
        "h0": torch.randn(B, H, dtype=f64),
        "c0": torch.randn(B, H, dtype=f64),
        "R_h": torch.randn(B, H, dtype=f64),
        "R_c": torch.randn(B, H, dtype=f64),
    }
    meta = {"source": "tests/reference/torch_lstm.py", "torch": torch.__version__}
    for dtype, suffix in ((torch.float64, "f64"), (torch.float32, "f32")):
        tensors = run_cell(cell_state, cell_inputs, dtype)
        safetensors_io.save(os.path.join(DATA, f"lstm_cell_{suffix}.safetensors"), tensors, meta)

    # LSTM: 2 layers, bidirectional; B = 4, T = 5, I = 3, H = 4
    B, T, I, H, L = 4, 5, 3, 4, 2
    lengths = [3, 5, 1, 4]
    lstm = torch.nn.LSTM(I, H, num_layers=L, bidirectional=True, batch_first=True).to(f64)
    lstm_state = {k: v.detach().clone() for k, v in lstm.state_dict().items()}
    lstm_inputs = {
        "x": torch.randn(B, T, I, dtype=f64),
        "h0": torch.randn(2 * L, B, H, dtype=f64),
        "c0": torch.randn(2 * L, B, H, dtype=f64),
        "R_out": torch.randn(B, T, 2 * H, dtype=f64),
        "R_h": torch.randn(2 * L, B, H, dtype=f64),
        "R_c": torch.randn(2 * L, B, H, dtype=f64),
    }
    for dtype, suffix in ((torch.float64, "f64"), (torch.float32, "f32")):
        tensors = run_lstm(lstm_state, lstm_inputs, lengths, L, dtype)
        safetensors_io.save(os.path.join(DATA, f"lstm_{suffix}.safetensors"), tensors, meta)


if __name__ == "__main__":
    main()
