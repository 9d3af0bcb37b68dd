"""docs/python.md's "Python in under 30 lines": the very block, run as it is written."""
import pathlib
import re

import pytest

DOC = pathlib.Path(__file__).resolve().parents[2] / "docs" / "python.md"


def snippet():
    if not DOC.exists():
        pytest.skip(f"{DOC} is not here (an installed copy of the tests)")
    text = DOC.read_text()
    section = text.split("## Python in under 30 lines", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_the_snippet_is_under_30_lines():
    assert len(snippet().strip().splitlines()) < 30


def test_the_snippet_trains_translates_plots_and_gradchecks(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    namespace = {"__name__": "snippet"}
    exec(compile(snippet(), str(DOC), "exec"), namespace)
    assert (tmp_path / "toy-model" / "model.safetensors").is_file()
    assert (tmp_path / "attention.png").read_bytes()[:4] == b"\x89PNG"
    namespace["test_cube"]()  # the pytest test it defines passes


def test_the_snippets_gradcheck_can_fail():
    # The same op with a wrong formula in its backward (2x^2 for 3x^2) fails the check.
    import attend
    import attend.testing

    def forward(ctx, x):
        ctx.save(x)
        return x * x * x

    def backward(ctx, g):
        x = ctx.saved(0)
        g.dx(0).add_(g.dy() * x * x * 2.0)

    wrong = attend.CustomOp("cube", forward, backward)
    x = attend.tensor([0.5, -1.5, 2.0], dtype=attend.float64, requires_grad=True)
    with pytest.raises(AssertionError):
        attend.testing.assert_gradients(wrong, [x])


def test_the_readme_shows_the_same_block():
    # The README's "From Python" is this very snippet, so the test above runs it too.
    readme = DOC.parents[1] / "README.md"
    if not readme.exists():
        pytest.skip(f"{readme} is not here (an installed copy of the tests)")
    section = readme.read_text().split("### From Python", 1)[1]
    assert re.search(r"```python\n(.*?)```", section, re.S).group(1) == snippet()
