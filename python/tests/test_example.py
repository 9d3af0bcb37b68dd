"""examples/python/toy_attention.py runs (at --tiny size) and draws its PNG."""
import os
import pathlib
import subprocess
import sys

EXAMPLE = pathlib.Path(__file__).resolve().parents[2] / "examples" / "python" / "toy_attention.py"


def test_toy_attention_example_trains_translates_and_draws(tmp_path):
    png = tmp_path / "attention.png"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    run = subprocess.run([sys.executable, str(EXAMPLE), "--tiny", "--png", str(png), "--model", str(tmp_path / "m")],
                         capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert " -> " in run.stdout
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not [p for p in tmp_path.iterdir() if p.name not in ("attention.png", "m")]
