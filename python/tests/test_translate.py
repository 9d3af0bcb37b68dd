"""attend.Translator, attend.explain and attend.bleu."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import attend
from toy_model import attend_program, train_tiny

SENTENCES = ["the cat sees a dog", "a big dog", "the red car is fast"]


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    return train_tiny(tmp_path_factory.mktemp("toy") / "m").out


def test_translate_gives_a_str_per_sentence(model):
    t = attend.Translator(model)
    out = t.translate(SENTENCES)
    assert len(out) == 3 and all(isinstance(s, str) and s for s in out)
    assert t.translate(SENTENCES[0]) == out[0]
    assert t.translate([]) == []
    assert t.translate([""]) == [""]


def test_translate_matches_the_command(model):
    program = attend_program()
    if program is None:
        pytest.skip("the attend program is not beside this build of the module")
    cli = subprocess.run([program, "translate", "--model", model, "--beam", "3", "--quiet"],
                         input="\n".join(SENTENCES) + "\n", capture_output=True, text=True, check=True)
    assert attend.Translator(model, beam=3).translate(SENTENCES) == cli.stdout.splitlines()


def test_workers_translate_as_one_worker(model):
    # Many batches (batch=2), decoded two and three at once by copies of the model.
    lines = [SENTENCES[i % 3] + " the cat" * (i % 5) for i in range(60)]
    def texts(workers):
        out = attend.Translator(model, batch=2, beam=2, n_best=2, workers=workers).translate(lines)
        return [[(t.text, t.log_prob) for t in n_best] for n_best in out]

    one = texts(1)
    assert len(one) == 60 and all(len(n_best) == 2 for n_best in one)
    for workers in (2, 3):
        assert texts(workers) == one
    with pytest.raises(attend.Error, match="workers"):
        attend.Translator(model, workers=0)


def test_details_give_attention_and_alignment(model):
    t = attend.Translator(model).translate(SENTENCES, details=True)[0]
    assert isinstance(t, attend.Translation)
    assert t.attention.shape == (len(t.output_tokens) + 1, len(t.source_tokens))
    np.testing.assert_allclose(t.attention.sum(axis=1), 1, rtol=1e-6)
    assert all(0 <= s < len(t.source_words) and 0 <= o < len(t.output_words) for s, o in t.alignment)
    assert str(t) == t.text


def test_n_best_lists(model):
    out = attend.Translator(model, beam=4, n_best=3).translate(SENTENCES[:2])
    assert [len(n) for n in out] == [3, 3]
    assert out[0][0].score >= out[0][1].score >= out[0][2].score


@pytest.mark.parametrize("flags, message", [
    (dict(beam=2, n_best=3), "n-best"),
    (dict(beam=0), "beam"),
    (dict(show_attention=True), "explain_grad"),
    (dict(length_penalty="long"), "length"),
])
def test_bad_decoding_flags_raise(model, flags, message):
    with pytest.raises(attend.Error, match=message):
        attend.Translator(model, **flags)


def test_bad_inputs_raise(model, tmp_path):
    with pytest.raises(attend.Error):
        attend.Translator(str(tmp_path / "absent"))
    t = attend.Translator(model)
    with pytest.raises(attend.Error):
        t.translate([None])
    with pytest.raises(attend.Error, match="line break"):
        t.translate(["the cat\nthe dog"])
    with pytest.raises(attend.Error):
        t.translate(["the cat", "a " * 300000])  # too long to decode within the memory limit: refused first


def test_explain_grad_gives_alpha_and_signed_gradient(model):
    g = attend.Translator(model).explain_grad("the cat sees a dog", "le chat voit un chien")
    s, t = len(g["source_tokens"]), len(g["target_tokens"])
    assert g["target_tokens"][-1] == "</s>"
    assert g["alpha"].shape == (t, s) and g["dalpha"].shape == (t, s)
    np.testing.assert_allclose(g["alpha"].sum(axis=1), 1, rtol=1e-6)
    assert g["loss"] > 0 and (g["dalpha"] < 0).any()
    own = attend.Translator(model).explain_grad("the cat")
    assert own["target_tokens"][:-1] == attend.Translator(model).translate(["the cat"], details=True)[0].output_tokens


def test_explain_returns_every_number_as_arrays():
    r = attend.explain("additive", seed=2)
    assert r["failed"] == 0 and r["checked"] > 0
    assert isinstance(r["values"]["alpha"], np.ndarray)
    np.testing.assert_allclose(r["values"]["alpha"].sum(), 1, rtol=1e-12)
    g = r["gradients"]
    assert all(set(v) == {"analytic", "numeric"} for v in g.values())
    assert "L =" in r["text"] or "L" in r["text"]
    lstm = attend.explain(lstm=True)
    assert lstm["kind"] == "lstm" and lstm["failed"] == 0
    with pytest.raises(attend.Error):
        attend.explain("cosine")


def test_bleu_is_sacrebleus():
    perfect = attend.bleu(["the cat sat on the mat"], ["the cat sat on the mat"])
    assert perfect.score == pytest.approx(100) and float(perfect) == perfect.score
    s = attend.bleu(["the cat sat on a mat today"], ["the cat sat on the mat"])
    assert 0 < s.score < 100
    assert list(s.totals) == [7, 6, 5, 4] and s.sys_len == 7 and s.ref_len == 6
    assert str(s).startswith("BLEU = ") and "tok:13a" in s.signature
    two = attend.bleu(["the cat sat on a mat today"], [["the cat sat on the mat"], ["the cat sat on a mat today"]])
    assert two.score == pytest.approx(100)
    with pytest.raises(attend.Error):
        attend.bleu(["a", "b"], ["a"])
    with pytest.raises(attend.Error):
        attend.bleu("a", "a")


def test_ctrl_c_during_translate_raises_keyboard_interrupt(model):
    # A child translates many sentences and sends itself SIGINT from a thread (which runs
    # because translate releases the GIL); the call must end with KeyboardInterrupt, and
    # the Translator must still work afterwards.
    script = textwrap.dedent(f"""
        import os, signal, threading, time, attend
        t = attend.Translator({model!r})
        started = threading.Event()
        def interrupt():
            started.wait()
            time.sleep(0.3)
            os.kill(os.getpid(), signal.SIGINT)
        threading.Thread(target=interrupt, daemon=True).start()
        try:
            started.set()
            t.translate(["the cat sees a dog"] * 400000)
            print("finished")
        except KeyboardInterrupt:
            print("KeyboardInterrupt", t.translate(["a big dog"]) == t.translate(["a big dog"]))
    """)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600, env=env)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["KeyboardInterrupt", "True"]


def test_quantize_makes_an_int8_model_that_translates(model, tmp_path):
    out = tmp_path / "int8"
    done = attend.quantize(model, out)
    assert done["matrices"] == 12 and done["quantized"] > 0 and not done["replaced"]
    assert done["bytes_out"] < done["bytes_in"]
    assert (out / "model.safetensors").exists()
    translations = attend.Translator(str(out)).translate(SENTENCES)
    assert len(translations) == 3 and all(isinstance(s, str) for s in translations)
    with pytest.raises(attend.Error, match="the directory exists"):
        attend.quantize(model, out)
    assert attend.quantize(model, out, overwrite=True)["replaced"]
    with pytest.raises(attend.Error, match="is an int8 model already"):
        attend.quantize(out, tmp_path / "again")
    with pytest.raises(attend.Error, match="its weights are int8"):
        attend.Translator([model, str(out)])
