#pragma once
// Everything in models/: the Seq2Seq model, decoding, data, BLEU, training.
#include "models/bleu.hpp"
#include "models/corpus.hpp"
#include "models/dataset.hpp"
#include "models/decoding.hpp"
#include "models/evaluation.hpp"
#include "models/gettext.hpp"
#include "models/model_dir.hpp"
#include "models/seq2seq.hpp"
#include "models/tokenizer.hpp"
#include "models/toy_language.hpp"
#include "models/trainer.hpp"
#include "models/vocabulary.hpp"
