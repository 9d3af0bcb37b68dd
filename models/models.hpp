#pragma once
// Everything in models/: the Seq2Seq model and its directory on disk; data/ (text
// to tokens), decode/ (greedy, beam, ensembles), train/ (trainer, checkpoints, MPI,
// averaging), eval/ (BLEU) and quantize/ (int8 models). data/detail/, decode/detail/ and train/detail/ hold
// implementation headers: not API, not included here.
#include "models/data/corpus.hpp"
#include "models/data/dataset.hpp"
#include "models/data/gettext.hpp"
#include "models/data/subword.hpp"
#include "models/data/text_codec.hpp"
#include "models/data/tokenizer.hpp"
#include "models/data/toy_language.hpp"
#include "models/data/vocabulary.hpp"
#include "models/decode/alignment.hpp"
#include "models/decode/decoding.hpp"
#include "models/decode/ensemble.hpp"
#include "models/decode/top_tokens.hpp"
#include "models/eval/bleu.hpp"
#include "models/eval/evaluation.hpp"
#include "models/model_dir.hpp"
#include "models/quantize/quantize.hpp"
#include "models/quantize/quantize_dir.hpp"
#include "models/seq2seq.hpp"
#include "models/train/average.hpp"
#include "models/train/checkpoint.hpp"
#include "models/train/distributed.hpp"
#include "models/train/trainer.hpp"
