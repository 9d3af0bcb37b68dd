#!/usr/bin/python3
"""Reference values for models/eval/bleu.cpp, written to tests/data/bleu_reference.json.

Run with Debian's Python and NLTK (python3-nltk):  /usr/bin/python3 tests/reference/bleu_reference.py

- "corpora": pre-tokenized corpora scored by NLTK's corpus_bleu, without smoothing
  (method0) and with SmoothingFunction().method3, the NIST geometric smoothing that
  sacreBLEU calls 'exp'; also the summed clipped n-gram counts and the brevity
  penalty, from NLTK's own modified_precision / closest_ref_length / brevity_penalty.
  NLTK counts max(1, number of n-grams) as a sentence's n-gram total, so a
  hypothesis shorter than n adds 1 to NLTK's total where sacreBLEU adds 0; the test
  checks that difference and compares scores directly only for corpora without such
  short hypotheses.
- "tok13a": sacreBLEU's 13a tokenizer applied with Python's re module, the engine
  sacreBLEU itself uses (the four substitutions of sacrebleu/tokenizers/
  tokenizer_re.py after the replacements of tokenizer_13a.py).
- "detokenized": whole detokenized corpora: 13a tokens as above, then NLTK method3,
  which is sacreBLEU's corpus BLEU (smooth 'exp', no effective order) whenever every
  order has at least one hypothesis n-gram.

sacreBLEU itself is not a Debian package (no python3-sacrebleu in bookworm), so its
own documented examples are checked in tests/models/eval/test_bleu.cpp instead.
"""
import json
import os
import re
import warnings

from nltk.translate.bleu_score import (SmoothingFunction, brevity_penalty, closest_ref_length, corpus_bleu,
                                       modified_precision)


def tokenize_13a(line):
    line = line.rstrip()  # BLEU._preprocess_segment
    line = line.replace('<skipped>', '')
    line = line.replace('-\n', '')
    line = line.replace('\n', ' ')
    line = line.replace('&quot;', '"')
    line = line.replace('&amp;', '&')
    line = line.replace('&lt;', '<')
    line = line.replace('&gt;', '>')
    line = ' ' + line + ' '
    line = re.sub(r'([\{-\~\[-\` -\&\(-\+\:-\@\/])', r' \1 ', line)
    line = re.sub(r'([^0-9])([\.,])', r'\1 \2 ', line)
    line = re.sub(r'([\.,])([^0-9])', r' \1 \2', line)
    line = re.sub(r'([0-9])(-)', r'\1 \2 ', line)
    return line.split()


def nltk_scores(hyps, refs):
    list_of_refs = [[r] for r in refs]
    none = corpus_bleu(list_of_refs, hyps, smoothing_function=SmoothingFunction().method0)
    exp = corpus_bleu(list_of_refs, hyps, smoothing_function=SmoothingFunction().method3)
    matches, totals = [0] * 4, [0] * 4
    for ref, hyp in zip(refs, hyps):
        for n in range(1, 5):
            p = modified_precision([ref], hyp, n)  # Fraction(..., _normalize=False)
            matches[n - 1] += p.numerator
            totals[n - 1] += p.denominator
    sys_len = sum(len(h) for h in hyps)
    ref_len = sum(closest_ref_length([r], len(h)) for r, h in zip(refs, hyps))
    return {
        'nltk_none': float(none), 'nltk_exp': float(exp), 'matches': matches, 'totals': totals,
        'sys_len': sys_len, 'ref_len': ref_len, 'brevity_penalty': brevity_penalty(ref_len, sys_len),
    }


def split(corpus):
    return [s.split() for s in corpus]


CORPORA = {
    # Several sentences, every order matched, hypotheses shorter than references (BP < 1).
    'several_sentences_short': (
        ['the cat sat on the mat', 'a dog ran in the park today', 'it is raining'],
        ['the cat sat on the red mat', 'the dog ran in the big park today', 'it is raining again now']),
    # Unigram and bigram matches but no trigram or 4-gram match.
    'no_trigram_match': (
        ['the cat the dog a bird sings', 'red blue green'],
        ['the cat and the dog sings a bird', 'red and blue or green']),
    # No 4-gram match only.
    'no_fourgram_match': (
        ['one two three x four five six seven'],
        ['one two three four five six y seven']),
    # The hypothesis is longer than the reference: BP = 1.
    'long_hypothesis': (
        ['le chat est sur le tapis rouge et il dort bien', 'merci beaucoup mon ami'],
        ['le chat est sur le tapis', 'merci mon ami']),
    'identical': (
        ['a b c d e', 'f g h i'],
        ['a b c d e', 'f g h i']),
    # One-token sentences beside a long one: short sentences have no higher-order n-grams.
    'one_token_sentences': (
        ['yes', 'no', 'the quick brown fox jumps over the lazy dog'],
        ['yes', 'maybe', 'the quick brown fox jumped over the lazy dog']),
    # Repeated words: clipping by the reference count.
    'clipping': (
        ['the the the the the the the', 'on on a mat on a mat'],
        ['the cat is on the mat', 'on a mat on a mat']),
    # Multi-byte tokens.
    'unicode': (
        ['l\u2019\u00e9t\u00e9 est tr\u00e8s chaud \u00e0 Z\u00fcrich cette ann\u00e9e', '\u6f22 \u5b57 \u306f \u96e3 \u3057 \u3044'],
        ['l\u2019\u00e9t\u00e9 est chaud \u00e0 Z\u00fcrich cette ann\u00e9e', '\u6f22 \u5b57 \u306f \u3068\u3066\u3082 \u96e3 \u3057 \u3044']),
}

TOK13A = [
    'Hello, world!',
    "It wasn't surprising.",
    'The price is $3.50, or 1,000.5 euros.',
    'a.b,c. .5 5. 3-4 a-b 3- -3 x--y',
    'Tom &amp; Jerry &quot;quoted&quot; &lt;tag&gt; &amp;lt;',
    'line one-\nline two\nthree <skipped> four',
    'trailing spaces and tabs \t  ',
    'unicode: caf\u00e9, na\u00efve\u2026 \u00ab guillemets \u00bb \u2014 5\u20ac.',
    'multi-byte before punctuation: \u00e9. \u00e9, \u6f22.\u5b57 \u00e9-1 1-\u00e9',
    'non-breaking\u00a0space and\u2009thin space and\u3000ideographic',
    'brackets [x] {y} (z) <w> | ~ ^ _ ` @ # % * + = : ; ? /',
    '...,,,..',
    '',
    '   ',
    'x',
]

DETOKENIZED = {
    'sentences_with_punctuation': (
        ['The cat sat on the mat.', "It's 3.5 degrees, isn't it?", 'See you at 10-11 am!'],
        ['The cat sat on the red mat.', "It's 3.5 degrees today, isn't it?", 'See you at 10-11 am, Bob!']),
    'french': (
        ['L\u2019homme, qui dort, r\u00eave.', 'Le chat est noir et blanc.'],
        ['L\u2019homme qui dort r\u00eave.', 'Le chat est noir.']),
}


def main():
    # NLTK warns about orders without a match; the zero it then uses is part of the reference.
    warnings.filterwarnings('ignore', module='nltk')
    out = {'generator': 'tests/reference/bleu_reference.py (NLTK %s)' % __import__('nltk').__version__,
           'corpora': [], 'tok13a': [], 'detokenized': []}
    for name, (hyps, refs) in CORPORA.items():
        h, r = split(hyps), split(refs)
        out['corpora'].append({'name': name, 'hypotheses': h, 'references': r, **nltk_scores(h, r)})
    for line in TOK13A:
        out['tok13a'].append({'input': line, 'tokens': tokenize_13a(line)})
    for name, (hyps, refs) in DETOKENIZED.items():
        h = [tokenize_13a(s) for s in hyps]
        r = [tokenize_13a(s) for s in refs]
        scores = nltk_scores(h, r)
        # No hypothesis shorter than 4 tokens, so NLTK's totals are sacreBLEU's.
        assert all(len(t) >= 4 for t in h), name
        out['detokenized'].append({'name': name, 'hypotheses': hyps, 'references': refs,
                                   'score': 100 * scores['nltk_exp'], 'matches': scores['matches'],
                                   'totals': scores['totals']})
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'data', 'bleu_reference.json')
    with open(path, 'w', encoding='utf-8') as f:
        json.dump(out, f, ensure_ascii=False, indent=1)
        f.write('\n')
    print('wrote', os.path.normpath(path))


if __name__ == '__main__':
    main()
