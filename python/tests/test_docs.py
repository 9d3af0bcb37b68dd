"""The Python examples of docs/python.md run, in order, in one namespace."""
import pathlib
import re
import tempfile

import pytest

DOC = pathlib.Path(__file__).resolve().parents[2] / "docs" / "python.md"


def blocks():
    return re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)


def test_the_examples_run(monkeypatch):
    if not DOC.exists():
        pytest.skip(f"{DOC} is not here (an installed copy of the tests)")
    found = blocks()
    assert found, "docs/python.md has no python examples"
    namespace = {}
    with tempfile.TemporaryDirectory() as scratch:  # what an example writes goes here, and goes
        monkeypatch.chdir(scratch)
        for code in found:
            exec(compile(code, str(DOC), "exec"), namespace)
        for name, value in list(namespace.items()):  # the pytest example defines tests: run them
            if name.startswith("test_") and callable(value):
                value()
        monkeypatch.undo()
