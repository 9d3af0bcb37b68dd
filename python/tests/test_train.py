"""attend.train: the command's flags, defaults, progress and Ctrl-C, from Python."""
import json
import os
import signal
import subprocess
import sys
import textwrap

import pytest

import attend
from toy_model import TINY, attend_program, train_tiny


def test_train_saves_a_model_and_returns_its_history(tmp_path, capfd):
    result = train_tiny(tmp_path / "m")
    assert result.out == str(tmp_path / "m")
    for name in ("config.json", "model.safetensors", "source.vocab", "target.vocab", "train_log.csv"):
        assert (tmp_path / "m" / name).is_file(), name
    assert [row["epoch"] for row in result.history] == [1, 2, 3]
    assert result.history[-1]["valid_loss"] < result.history[0]["valid_loss"]
    out = capfd.readouterr().out
    assert "epoch 1" in out and "best: epoch" in out  # the command's progress lines


def test_train_runs_the_commands_path_bit_for_bit(tmp_path):
    program = attend_program()
    if program is None:
        pytest.skip("the attend program is not beside this build of the module")
    train_tiny(tmp_path / "py")
    args = [program, "train", "--out", str(tmp_path / "cli")]
    for key, value in TINY.items():
        flag = "--" + key.replace("_", "-")
        args += [flag] if value is True else [flag, str(value)]
    subprocess.run(args, check=True, capture_output=True)
    assert (tmp_path / "py" / "model.safetensors").read_bytes() == (tmp_path / "cli" / "model.safetensors").read_bytes()


def test_an_existing_model_is_never_overwritten_by_accident(tmp_path):
    train_tiny(tmp_path / "m", epochs=1)
    before = (tmp_path / "m" / "model.safetensors").read_bytes()
    with pytest.raises(attend.Error, match="overwrite"):
        train_tiny(tmp_path / "m", epochs=1, seed=9)
    assert (tmp_path / "m" / "model.safetensors").read_bytes() == before


@pytest.mark.parametrize("flags, message", [
    (dict(hidden=0), "hidden"),
    (dict(no_such_flag=3), "no-such-flag"),
    (dict(attention="sideways"), "attention"),
    (dict(optimizer=["adam", "sgd"]), "optimizer"),
    (dict(embed=object()), "embed"),
])
def test_bad_flags_raise_attend_error_naming_them(tmp_path, flags, message):
    with pytest.raises(attend.Error, match=message):
        train_tiny(tmp_path / "m", **flags)
    assert not (tmp_path / "m").exists()


def test_no_data_source_is_an_error(tmp_path):
    with pytest.raises(attend.Error):
        attend.train(out=str(tmp_path / "m"))


def test_ctrl_c_raises_keyboard_interrupt_and_leaves_no_half_written_model(tmp_path):
    # A child process trains for long and sends itself SIGINT from a thread once the
    # first epoch is under way; it must see KeyboardInterrupt, and the directory must
    # hold a whole model or nothing.
    out = tmp_path / "m"
    script = textwrap.dedent(f"""
        import os, signal, threading, time, attend
        def interrupt():
            while not any(os.scandir({str(tmp_path)!r})):
                time.sleep(0.01)
            time.sleep(0.5)
            os.kill(os.getpid(), signal.SIGINT)
        threading.Thread(target=interrupt, daemon=True).start()
        try:
            attend.train(toy=True, toy_n=4000, epochs=1000, embed=16, hidden=16, out={str(out)!r})
        except KeyboardInterrupt:
            print("KeyboardInterrupt")
    """)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, env=env)
    assert run.returncode == 0, run.stderr
    assert run.stdout.rstrip().endswith("KeyboardInterrupt"), run.stdout
    leftovers = [p.name for p in tmp_path.iterdir() if p.name != "m"]
    assert leftovers == []  # no staging directory left behind
    if out.exists():  # a whole checkpoint: the run resumes from it, finishes its epoch and saves the model
        state = json.loads((out / "checkpoint" / "trainer_state.json").read_text())
        attend.train(toy=True, toy_n=4000, epochs=state["epoch"] + 1, embed=16, hidden=16, out=str(out), resume=True)
        assert isinstance(attend.Translator(str(out)).translate(["the cat"])[0], str)


def test_help_shows_the_commands_flags():
    assert "--max-steps" in attend.train.__doc__ and "--attention" in attend.train.__doc__
    assert "--beam" in attend.Translator.__doc__
