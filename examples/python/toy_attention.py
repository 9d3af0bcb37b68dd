#!/usr/bin/env python3
"""Train a toy English->French model from Python, translate a sentence, and draw what its
attention does: the weights alpha beside the signed gradient of the loss at them, dL/dalpha
(blue where the loss wants a weight up, red where it wants it down).

    PYTHONPATH=build/release/python python3 examples/python/toy_attention.py --png attention.png

--tiny trains for seconds (the test runs it so); the default, a few minutes on one core,
gives the picture in docs/images/python-attention.png.
"""
import argparse
import os
import tempfile

import matplotlib

matplotlib.use("Agg")  # draws to a file; no display needed
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

import attend  # noqa: E402

SENTENCE = "the small cat sees the red car"
REFERENCE = "le petit chat voit la voiture rouge"


def heatmap(ax, values, g, title, cmap, vmin, vmax):
    image = ax.imshow(values, cmap=cmap, vmin=vmin, vmax=vmax, aspect="auto")
    ax.set_xticks(range(len(g["source_tokens"])), g["source_tokens"], rotation=45, ha="right")
    ax.set_yticks(range(len(g["target_tokens"])), g["target_tokens"])
    ax.set_title(title)
    return image


def draw(g, translation, path):
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4.2), constrained_layout=True)
    fig.colorbar(heatmap(left, g["alpha"], g, "attention α", "Greys", 0, 1), ax=left)
    bound = float(np.abs(g["dalpha"]).max()) or 1.0
    fig.colorbar(heatmap(right, g["dalpha"], g, "dL/dα (blue: wanted up)", "RdBu_r", -bound, bound), ax=right)
    fig.suptitle(f"{SENTENCE}  →  {translation}   (loss {g['loss']:.3f} per token)")
    fig.savefig(path, dpi=80)
    plt.close(fig)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--png", default="attention.png", help="where to draw (default: attention.png)")
    parser.add_argument("--model", help="where to keep the model (default: a temporary directory)")
    parser.add_argument("--tiny", action="store_true", help="train for seconds, not minutes")
    args = parser.parse_args()

    size = dict(toy_n=300, toy_max_len=8, epochs=2, embed=16, hidden=16) if args.tiny else \
        dict(toy_n=20000, toy_max_len=10, epochs=4, embed=64, hidden=64)
    with tempfile.TemporaryDirectory() as scratch:
        model_dir = args.model or os.path.join(scratch, "toy-model")
        result = attend.train(toy=True, batch=32, out=model_dir, overwrite=os.path.exists(model_dir), **size)
        print(f"trained {len(result.history)} epochs; last validation loss {result.history[-1]['valid_loss']}")
        translator = attend.Translator(model_dir, beam=4)
        translation = translator.translate([SENTENCE])[0]
        print(f"{SENTENCE} -> {translation}")
        g = translator.explain_grad(SENTENCE, REFERENCE)
        draw(g, translation, args.png)
        print(f"drew α and dL/dα to {args.png}")


if __name__ == "__main__":
    main()
