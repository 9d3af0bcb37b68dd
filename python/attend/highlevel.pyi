import os
from dataclasses import dataclass
from typing import Any, Optional, Sequence, Union, overload

import numpy as np

_Path = Union[str, os.PathLike]

class Translation:
    text: str
    source_tokens: list[str]
    output_tokens: list[str]
    source_words: list[str]
    output_words: list[str]
    attention: np.ndarray
    alignment: list[tuple[int, int]]
    log_prob: float
    score: float
    length_penalty: float
    coverage_penalty: float

class BleuScore:
    score: float
    precisions: list[float]
    matches: list[int]
    totals: list[int]
    brevity_penalty: float
    sys_len: int
    ref_len: int
    signature: str
    def __float__(self) -> float: ...

@dataclass
class TrainResult:
    out: str
    history: list[dict[str, Any]]

def train(data: Optional[_Path] = None, *, out: _Path = "model", **flags: Any) -> TrainResult: ...

class Translator:
    def __init__(self, model_dir: Union[_Path, Sequence[_Path]] = "model", **flags: Any) -> None: ...
    @overload
    def translate(self, sentences: str, *, details: bool = False) -> Any: ...
    @overload
    def translate(self, sentences: Sequence[str], *, details: bool = False) -> list[Any]: ...
    def explain_grad(self, source: str, reference: Optional[str] = None) -> dict[str, Any]: ...

def explain(attention: str = "additive", *, seed: int = 1, padded: bool = False, lstm: bool = False) -> dict[str, Any]: ...
def bleu(hypotheses: Sequence[str], references: Union[Sequence[str], Sequence[Sequence[str]]]) -> BleuScore: ...
def quantize(model_dir: _Path, out: _Path, *, overwrite: bool = False) -> dict[str, Any]: ...
