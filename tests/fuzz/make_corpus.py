#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets: tests/fuzz/corpus/<target>/<seed>.

Small valid files and near-valid ones (one thing wrong), a few hundred bytes
each, so that libFuzzer starts from the formats' structure. Standard library
only; run from anywhere:  python3 tests/fuzz/make_corpus.py
The config and trainer_state seeds describe the tiny model that
tests/fuzz/targets_model.cpp puts beside them (6-token vocabularies, embed 4,
hidden 4). Rerunning rewrites the same bytes.
"""
import json
import pathlib
import random
import struct

ROOT = pathlib.Path(__file__).resolve().parent / "corpus"


def put(target, name, data):
    d = ROOT / target
    d.mkdir(parents=True, exist_ok=True)
    (d / name).write_bytes(data if isinstance(data, bytes) else data.encode("utf-8"))


def safetensors(tensors, metadata=None, pad=True):
    """tensors: list of (name, dtype, shape, values); data laid out in list order."""
    header, data = {}, b""
    for name, dtype, shape, values in tensors:
        fmt = "<%d%s" % (len(values), {"F32": "f", "F64": "d", "I8": "b"}[dtype])
        blob = struct.pack(fmt, *values)
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(blob)]}
        data += blob
    if metadata:
        header["__metadata__"] = metadata
    text = json.dumps(header, separators=(",", ":")).encode()
    if pad:
        text += b" " * ((8 - len(text) % 8) % 8)
    return struct.pack("<Q", len(text)) + text + data


def seeds_safetensors():
    two = [("b", "F64", [2], [1.5, -2.0]), ("w", "F32", [2, 3], [0, 1, 2, 3, 4, 5])]
    good = safetensors(two, {"format": "pt", "step": "3"})
    put("safetensors", "valid", good)
    put("safetensors", "empty", safetensors([]))
    put("safetensors", "scalar_and_zero_size", safetensors([("s", "F32", [], [7.0]), ("z", "F32", [0, 4], [])]))
    put("safetensors", "truncated_data", good[:-5])
    put("safetensors", "header_too_long", struct.pack("<Q", 1 << 40) + good[8:])
    put("safetensors", "bad_dtype", good.replace(b'"F32"', b'"I32"'))
    overlap = safetensors(two).replace(b'"data_offsets":[16,40]', b'"data_offsets":[10,34]')
    put("safetensors", "overlapping_offsets", overlap)
    # an int8 model's layout (models/quantize/quantize.hpp): NAME as I8, NAME.scale as F32
    int8 = [("w.scale", "F32", [2], [0.5, 0.25]), ("w", "I8", [2, 3], [-127, 0, 5, 127, -1, 2]), ("e", "I8", [3], [1, 2, 3])]
    put("safetensors", "int8_weights", safetensors(int8, {"weights": "int8"}))


def mo(entries, big_endian=False):
    """entries: (msgid, msgstr) byte strings, already sorted."""
    e = ">" if big_endian else "<"
    n = len(entries)
    originals_at, translations_at = 28, 28 + 8 * n
    strings_at = translations_at + 8 * n
    blob, orig_table, trans_table = b"", b"", b""
    for msgid, _ in entries:
        orig_table += struct.pack(e + "II", len(msgid), strings_at + len(blob))
        blob += msgid + b"\0"
    for _, msgstr in entries:
        trans_table += struct.pack(e + "II", len(msgstr), strings_at + len(blob))
        blob += msgstr + b"\0"
    head = struct.pack(e + "IIIIIII", 0x950412DE, 0, n, originals_at, translations_at, 0, 0)
    return head + orig_table + trans_table + blob


def seeds_mo():
    entries = [
        (b"", b"Content-Type: text/plain; charset=UTF-8\n"),
        (b"Open file", b"Ouvrir le fichier"),
        (b"Save", b"Enregistrer"),
        (b"menu\x04Quit", b"Quitter"),
        (b"%d file\0%d files", b"%d fichier\0%d fichiers"),
    ]
    good = mo(entries)
    put("mo", "valid", good)
    put("mo", "big_endian", mo(entries[:3], big_endian=True))
    put("mo", "truncated", good[:60])
    put("mo", "count_too_large", good[:8] + struct.pack("<I", 1 << 30) + good[12:])
    put("mo", "offset_past_end", good[:36] + struct.pack("<I", 1 << 20) + good[40:])


def seeds_corpus():
    put("corpus", "valid", "Hello.\tBonjour.\nThe cat sleeps.\tLe chat dort.\nl'homme\tthe man\n3.14 e-mail\t3,14 courriel\n")
    put("corpus", "crlf", "one\tun\r\ntwo\tdeux\r\n")
    put("corpus", "bad_lines", "no tab here\na\tb\tc\n\tempty source\n  \tspaces\nok\td'accord\n\n")
    put("corpus", "invalid_utf8", b"caf\xe9\tcafe\nbon\tgood\n\xc3\x28\tx\n")


def seeds_vocabulary():
    special = "<pad>\n<unk>\n<s>\n</s>\n"
    put("vocabulary", "valid", special + "the\ncat\nl'\nhomme\nété\n")
    put("vocabulary", "specials_only", special)
    put("vocabulary", "crlf", special.replace("\n", "\r\n") + "a\r\n")
    put("vocabulary", "duplicate", special + "a\nb\na\n")
    put("vocabulary", "missing_special", "<pad>\n<unk>\n</s>\na\n")
    put("vocabulary", "invalid_utf8", special.encode() + b"ok\n\xff\xfe\n")


def config(**model):
    m = {"source_vocab": 6, "target_vocab": 6, "embed": 4, "hidden": 4, "layers": 1,
         "bidirectional": True, "dropout": 0.0, "attention": "additive"}
    m.update(model)
    return json.dumps({"format": "attend-seq2seq-1", "model": m, "source_vocab": "source.vocab",
                       "target_vocab": "target.vocab", "tokenizer": {"lowercase": False, "split_elision": True}},
                      indent=2) + "\n"


def seeds_config():
    put("config", "valid", config())
    put("config", "no_attention", config(attention="none", bidirectional=False))
    put("config", "hidden_mismatch", config(hidden=5))
    put("config", "vocab_mismatch", config(source_vocab=7))
    put("config", "fraction", config(embed=4.5))
    put("config", "wrong_types", config(layers="1", dropout=None))
    put("config", "truncated", config()[:70])


def trainer_state(**fields):
    generator = [12345678901234567, 1, 2, 3]
    s = {"epoch": 1, "position": 1, "global_step": 3, "epoch_loss_sum": 4.5, "epoch_tokens": 6,
         "epoch_steps": 1, "elapsed_seconds": 0.25, "best_valid_loss": 1.75,
         "sampling_generator": generator, "dropout_generator": generator, "encoder_dropout_generator": generator,
         "history": [{"epoch": 0, "steps": 2, "complete": True, "train_loss": 1.9, "valid_loss": 1.75,
                      "valid_bleu": None, "elapsed_seconds": 0.1}]}
    s.update(fields)
    return json.dumps(s, indent=2) + "\n"


def seeds_trainer_state():
    put("trainer_state", "valid", trainer_state())
    put("trainer_state", "negative", trainer_state(epoch=-1, global_step=-5))
    put("trainer_state", "short_generator", trainer_state(sampling_generator=[1, 2]))
    put("trainer_state", "huge_numbers", trainer_state(position=1e300, epoch_tokens=18446744073709551615))
    put("trainer_state", "truncated", trainer_state()[:120])


def seeds_tokenizer():
    # The first byte holds the options: bit 0 lower-case, bit 1 split elision.
    put("tokenizer", "french", b"\x02" + "L'homme qu'il a vu « peut-être » 3,14 € — fin…".encode())
    put("tokenizer", "mixed", b"\x03" + "ÉCOLE Straße ЖУК ΩΜΕΓΑ 漢字 e-mail 10,000 don't\u00a0\u3000x".encode())
    put("tokenizer", "controls", b"\x00a\tb\x01c\x7fd\xc2\x85e")
    put("tokenizer", "invalid_utf8", b"\x02ok \xc0\xaf \xed\xa0\x80 \xf4\x90\x80\x80 end")


def seeds_bleu():
    hyps = "the cat is on the mat\nthere is a cat on the mat\n"
    refs = "the cat is on the mat\nthe cat sat on the mat\n"
    put("bleu", "valid", hyps + "\0" + refs)
    put("bleu", "empty_lines", "\n\nx\n\0\n\n\n")
    put("bleu", "count_mismatch", "a b c\n\0a b c\nd e f\n")
    put("bleu", "punctuation", "Hello, world! (it's 3.5%)\n\0Hello , world ! ( it 's 3.5 % )\n")


def seeds_roundtrip():
    rng = random.Random(12)
    for i in range(4):
        put("roundtrip", "random%d" % i, bytes(rng.randrange(256) for _ in range(64 + 48 * i)))


def seeds_alignment():
    # "TABLE NUL CHOICES": an --unk-dict table, then bytes that shape a matrix and word maps.
    put("alignment", "table", "car voiture 0.9\ncar auto 0.1\nred rouge\n")
    put("alignment", "matrix", b"house maison\n\x00" + bytes([3, 3, 0xff, 0x10, 0x80, 0x40, 0x20, 1, 2, 3, 4, 5, 6, 7, 8, 9,
                                                             10, 3, 0, 1, 2, 3, 3, 0, 1, 2, 3, 4, 4, 1, 0]))
    put("alignment", "bad_lines", b"a b c d\n\xc3\x28 x\nz y nan\n")


def seeds_serve_request():
    # The first byte chooses the endpoint: 0 POST /translator/translate, 1 POST /explain.
    put("serve_request", "translate", b"\x00" + json.dumps([{"src": "the cat", "id": 0}, {"src": "a dog"}]).encode())
    put("serve_request", "translate_options", b"\x00" + json.dumps(
        [{"src": "the cat", "beam_size": 4, "n_best": 2, "report_align": True, "replace_unk": False}]).encode())
    put("serve_request", "translate_bad", b"\x00[{\"src\": \"caf\xc3\x28\", \"id\": -1}, 5]")
    put("serve_request", "explain", b"\x01" + json.dumps(
        {"src": "the red car", "ref": "la voiture rouge", "model": 0, "step": 2, "beam_size": 3}).encode())
    put("serve_request", "explain_bad", b"\x01{\"src\": 7, \"step\": 18446744073709551616, \"x\": [")


def tiny_parameters():
    """The parameters of config()'s tiny model (embed 4, hidden 4, 6-token vocabularies,
    one bidirectional layer, additive attention): (name, shape, int8) in any order."""
    out = [("source_embed.weight", [6, 4], False), ("target_embed.weight", [6, 4], False)]
    for suffix in ("_l0", "_l0_reverse"):
        out += [("encoder.weight_ih" + suffix, [16, 4], True), ("encoder.weight_hh" + suffix, [16, 4], True),
                ("encoder.bias_ih" + suffix, [16], False), ("encoder.bias_hh" + suffix, [16], False)]
    for bridge in ("bridge_h", "bridge_c"):
        out += [(bridge + ".weight", [4, 8], True), (bridge + ".bias", [4], False)]
    out += [("cell.weight_ih", [16, 8], True), ("cell.weight_hh", [16, 4], True), ("cell.bias_ih", [16], False),
            ("cell.bias_hh", [16], False), ("attention.W_k", [4, 8], True), ("attention.W_q", [4, 4], True),
            ("attention.b", [4], False), ("attention.v", [4], False), ("combine.weight", [4, 12], True),
            ("combine.bias", [4], False), ("project.weight", [6, 4], True), ("project.bias", [6], False)]
    return out


def int8_weights(spoil=None):
    """The tiny model's int8 weights file (models/quantize/quantize.hpp): NAME as I8,
    NAME.scale as F32, the rest F32; values from a fixed pattern."""
    tensors = []
    for name, shape, int8 in tiny_parameters():
        n = 1
        for d in shape:
            n *= d
        if int8:
            tensors.append((name, "I8", shape, [(i * 37) % 255 - 127 for i in range(n)]))
            tensors.append((name + ".scale", "F32", [shape[0]], [0.01 * (r + 1) for r in range(shape[0])]))
        else:
            tensors.append((name, "F32", shape, [0.05 * ((i % 7) - 3) for i in range(n)]))
    if spoil:
        tensors = spoil(tensors)
    return safetensors(tensors, {"weights": "int8"})


def seeds_quantized_weights():
    put("quantized_weights", "valid", int8_weights())
    put("quantized_weights", "negative_scale", int8_weights(
        lambda ts: [(n, d, s, [-v for v in vs]) if n == "project.weight.scale" else (n, d, s, vs) for n, d, s, vs in ts]))
    put("quantized_weights", "float_matrix", int8_weights(
        lambda ts: [(n, "F32" if n == "combine.weight" else d, s, vs) for n, d, s, vs in ts]))
    put("quantized_weights", "missing_scale", int8_weights(lambda ts: [t for t in ts if t[0] != "cell.weight_hh.scale"]))


for make in (seeds_safetensors, seeds_mo, seeds_corpus, seeds_vocabulary, seeds_config, seeds_trainer_state,
             seeds_tokenizer, seeds_bleu, seeds_roundtrip, seeds_alignment, seeds_serve_request, seeds_quantized_weights):
    make()
