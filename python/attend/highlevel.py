"""The high-level doors, as the `attend` command has them: train, Translator, explain, bleu.

attend.train and attend.Translator take the command's flags as keyword arguments (the
flag's name with '_' for '-': max_steps=100 is --max-steps 100; True for a flag that takes no
value; bidirectional=False is --unidirectional). Their defaults and checks are the
command's own: the arguments are parsed by `attend train` and `attend translate`, and the
run is the command's run.
"""
import csv
import json
import os
import sys
from dataclasses import dataclass, field

import numpy as np

from . import _attend

__all__ = ["train", "TrainResult", "Translator", "Translation", "explain", "bleu", "BleuScore", "quantize"]

# Bound as _attend._Translation and _attend._BleuScore (the extension's stubs are
# python/attend/_attend.pyi; these two are typed in highlevel.pyi); public here.
Translation = _attend._Translation
BleuScore = _attend._BleuScore
for _cls, _name in ((Translation, "Translation"), (BleuScore, "BleuScore")):
    _cls.__name__ = _cls.__qualname__ = _name
    _cls.__module__ = "attend"

# Flags whose default is on: False asks for their opposite.
_NEGATIONS = {"bidirectional": "--unidirectional"}


def _flags(kwargs):
    args = []
    for key, value in kwargs.items():
        if value is None:
            continue
        flag = "--" + key.replace("_", "-")
        if value is True:
            args.append(flag)
        elif value is False:
            if key in _NEGATIONS:
                args.append(_NEGATIONS[key])
        elif isinstance(value, (list, tuple)):
            for item in value:
                args += [flag, str(item)]
        elif isinstance(value, float):
            args += [flag, repr(value)]
        elif isinstance(value, (str, int, os.PathLike)):
            args += [flag, os.fspath(value) if isinstance(value, os.PathLike) else str(value)]
        else:
            raise _attend.Error(f"{flag}: expected a str, number or bool, got {type(value).__name__}")
    return args


def _read_log(path):
    if not os.path.exists(path):
        return []
    rows = []
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            parsed = {}
            for key, value in row.items():
                if value == "":  # a number the epoch does not have
                    parsed[key] = None
                    continue
                try:
                    parsed[key] = int(value)
                except (TypeError, ValueError):
                    try:
                        parsed[key] = float(value)
                    except (TypeError, ValueError):
                        parsed[key] = value
            rows.append(parsed)
    return rows


@dataclass
class TrainResult:
    """What attend.train leaves: the model directory (for attend.Translator) and the
    history of its epochs, as DIR/train_log.csv holds it (one dict per epoch)."""

    out: str
    history: list = field(default_factory=list)


def train(data=None, *, out="model", **flags):
    """train(data=None, *, out="model", **flags) -> TrainResult

    Trains a Seq2Seq model with attention exactly as `attend train` does, with the same
    flags, defaults and progress, and saves it in `out` (atomically: Ctrl-C stops after the
    current step, saves a checkpoint and raises KeyboardInterrupt; the model is whole or
    absent, and continues with resume=True). data is --data (a 'source<TAB>target' file);
    toy=True trains on the built-in toy language instead.

        result = attend.train(toy=True, toy_n=2000, epochs=2, hidden=32, out="toy-model")
        attend.Translator(result.out).translate(["the cat sees a dog"])

    The flags (from `attend train --help`):

    """
    if data is not None:
        flags["data"] = data
    flags["out"] = out
    sys.stdout.flush()
    sys.stderr.flush()
    _attend._train(_flags(flags))
    return TrainResult(out=str(out), history=_read_log(os.path.join(out, "train_log.csv")))


train.__doc__ += "\n".join("    " + line for line in _attend._train_help().splitlines())


class Translator:
    """Translator(model_dir="model", **flags)

    A trained model (a directory written by attend.train or `attend train`; a list of them
    is an ensemble), loaded once, translating lists of sentences as `attend translate` does,
    with its decoding flags and their defaults (for example beam=5, n_best=3,
    length_penalty="gnmt", coverage_penalty=0.2, replace_unk=True, alignments="hard").

        t = attend.Translator("toy-model", beam=5)
        t.translate(["the cat sees a dog"])                 # ['le chat voit un chien']
        t.translate(["the cat"], details=True)[0].attention  # NumPy (output+1, source)

    The flags (from `attend translate --help`; FILE, --show-attention, --explain-grad and
    --svg print for the command line and are not taken here):

    """

    def __init__(self, model_dir="model", **flags):
        models = [model_dir] if isinstance(model_dir, (str, os.PathLike)) else list(model_dir)
        flags = dict(flags, model=[os.fspath(m) for m in models], quiet=True)
        self._t = _attend._Translator(_flags(flags))

    def translate(self, sentences, *, details=False):
        """translate(sentences, *, details=False)

        sentences: a list of str (one sentence each). Returns a list of str, the best
        translation of each; with details=True a list of attend.Translation (text, tokens,
        attention as a NumPy array, hard alignment, log_prob); with n_best > 1 a list of
        n-best lists of attend.Translation, best first. A single str gives a single result.
        """
        if isinstance(sentences, str):
            return self.translate([sentences], details=details)[0]
        if not all(isinstance(s, str) for s in sentences):
            raise _attend.Error("translate: sentences must be a list of str")
        n_best = self._t.translate(list(sentences))
        if self._t.n_best > 1:
            return n_best
        if details:
            return [n[0] for n in n_best]
        return [n[0].text for n in n_best]

    def explain_grad(self, source, reference=None):
        """explain_grad(source, reference=None) -> dict

        What `attend translate --explain-grad` shows for one sentence pair: the attention
        weights alpha and the gradient of the loss at them, dL/dalpha (signed: < 0 where the
        loss wants the weight up), each a NumPy array (target tokens, source tokens), with
        source_tokens, target_tokens (</s> last), loss (mean per token) and the translation.
        Without a reference the target is the model's own greedy translation.
        """
        return self._t.explain_grad(source, reference)


Translator.__doc__ += "\n".join("    " + line for line in _attend._translate_help().splitlines())


def _array(entry, key):
    return np.asarray(entry[key], dtype=np.float64).reshape(entry["shape"])


def explain(attention="additive", *, seed=1, padded=False, lstm=False):
    """explain(attention="additive", *, seed=1, padded=False, lstm=False) -> dict

    `attend explain` as numbers: one decoder step of a tiny attention model (or, with
    lstm=True, an LSTM cell over 3 steps) in float64, backpropagated by hand. Returns
    {"values": {name: array}, "gradients": {name: {"analytic": array, "numeric": array}},
    "loss": float, "checked": rows compared, "failed": rows that disagree, "text": what the
    command prints, "graph_svg": the step's graph, "dot": its Graphviz DOT (attention only)}.
    """
    text, numbers, dot, graph, checked, failed = _attend._explain(attention, seed, padded, lstm)
    j = json.loads(numbers)
    out = {key: value for key, value in j.items() if key not in ("values", "gradients")}
    out["values"] = {name: _array(e, "data") for name, e in j.get("values", {}).items()}
    out["gradients"] = {name: {"analytic": _array(e, "analytic"), "numeric": _array(e, "numeric")}
                        for name, e in j.get("gradients", {}).items()}
    out.update(text=text, graph_svg=graph, dot=dot, checked=checked, failed=failed)
    return out


def bleu(hypotheses, references):
    """bleu(hypotheses, references) -> attend.BleuScore

    Corpus BLEU as sacreBLEU computes it (13a tokens, exp smoothing), as `attend bleu`:
    references is a list of str (one per hypothesis) or a list of such lists (several
    reference streams). The result has .score (0..100), .precisions, .matches, .totals,
    .brevity_penalty, .sys_len, .ref_len and .signature; float() and str() work.
    """
    if isinstance(hypotheses, str) or isinstance(references, str):
        raise _attend.Error("bleu: hypotheses and references must be lists of str, not a str")
    refs = list(references)
    streams = refs if refs and not isinstance(refs[0], str) else [refs]
    return _attend._bleu(list(hypotheses), [list(s) for s in streams])


def quantize(model_dir, out, *, overwrite=False):
    """quantize(model_dir, out, *, overwrite=False) -> dict

    `attend quantize MODEL_DIR OUT`: an int8 copy of a trained float32 model, for
    faster decoding (every weight matrix int8 with a float32 scale per row; the
    activations quantized row by row at each product). Translator reads it like any
    model directory. An existing out is replaced only with overwrite=True. Returns
    what was done: matrices, quantized and kept (weights), bytes_in and bytes_out
    (the weights files), replaced.
    """
    matrices, quantized, kept, bytes_in, bytes_out, replaced = _attend._quantize(
        os.fspath(model_dir), os.fspath(out), bool(overwrite))
    return dict(matrices=matrices, quantized=quantized, kept=kept, bytes_in=bytes_in, bytes_out=bytes_out,
                replaced=replaced)
