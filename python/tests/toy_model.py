"""A tiny toy model trained once for the tests of train, Translator and the example."""
import os
import pathlib

import attend

# Small enough to train in seconds on a busy machine; the flags are attend train's.
TINY = dict(toy=True, toy_n=2000, toy_max_len=6, epochs=3, embed=32, hidden=32, batch=16, lr=0.01, bleu_sentences=8)


def attend_program():
    """The attend command of this build tree, or None (an installed package has none beside it)."""
    build = pathlib.Path(attend.__file__).resolve().parent.parent.parent
    program = build / "tools" / "attend"
    return str(program) if program.exists() else None


def train_tiny(out, **extra):
    return attend.train(out=os.fspath(out), **dict(TINY, **extra))
