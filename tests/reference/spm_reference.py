"""Pieces of SentencePiece models as Python's sentencepiece reads them, for
tests/models/data/test_subword.cpp (the suite itself needs no Python).

Run with Debian's Python (python3-sentencepiece):
    /usr/bin/python3 tests/reference/spm_reference.py

The two models it reads are committed under tests/data:
  subword_attend.model     made by attend (a unigram model, 200 pieces, trained on
                           the toy language):
      attend train --toy --toy-n 2000 --subword unigram --vocab-size 200 \
          --max-steps 1 --epochs 1 --embed 8 --hidden 8 --out tm
      cp tm/subword.model tests/data/subword_attend.model
  subword_spm_train.model  made by SentencePiece's own spm_train (package
                           sentencepiece; BPE, 150 pieces, no normalization):
      attend data toy --n 2000 --seed 5 --out toy5.tsv && tr '\\t' '\\n' < toy5.tsv > toy5.txt
      spm_train --input=toy5.txt --model_prefix=spmtrain --vocab_size=150 \
          --model_type=bpe --normalization_rule_name=identity
      cp spmtrain.model tests/data/subword_spm_train.model
It writes tests/data/subword_reference.json: for each model, the pieces of each
sentence (an unknown piece written "<unk>", as attend names it) and the text
they decode to.
"""
import json
import os

import sentencepiece as spm

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "data")

SENTENCES = [
    "the red car",
    "my dirty window waits and every neighbour under the mouse carries every desk",
    "ma fenêtre sale attend et chaque voisin sous la souris porte chaque bureau",
    "des filles et ma fleur achètent les marchés sous un jardin",
    "l'homme qu'il voit près d'une robe",
    "  two  spaces   between   words  ",
    "Capitals, digits 12345 and punctuation: ok?",
    "unknown characters: 漢字 Ωμέγα ☃",
    "full-width ＡＢＣ１２３ and ligature ﬁ",
    "",
]


def main():
    out = {"sentences": SENTENCES, "models": {}}
    for name in ["subword_attend.model", "subword_spm_train.model"]:
        sp = spm.SentencePieceProcessor(model_file=os.path.join(DATA, name))
        pieces, decoded = [], []
        for s in SENTENCES:
            ids = sp.encode(s)
            p = ["<unk>" if sp.is_unknown(i) else sp.id_to_piece(i) for i in ids]
            pieces.append(p)
            decoded.append(sp.decode(ids))
        out["models"][name] = {"size": sp.get_piece_size(), "pieces": pieces, "decoded": decoded}
    with open(os.path.join(DATA, "subword_reference.json"), "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
