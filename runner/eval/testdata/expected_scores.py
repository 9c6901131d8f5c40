#!/usr/bin/python3
"""Computes the expected scores that runner/eval's tests check, from the
metric definitions and independently of the Go code.

ROUGE-1 as adk-python's response_match_score computes it
(final_response_match_v1.py: rouge_scorer.RougeScorer(["rouge1"],
use_stemmer=True).score(reference, candidate), F-measure): rouge_score's
tokenizer lowercases the text, turns every run of characters outside
[a-z0-9] into a space, splits on whitespace, stems the tokens longer than
3 characters with NLTK's PorterStemmer() (default mode), and keeps the
tokens that match ^[a-z0-9]+$. The score counts unigram overlap as the sum
of min(count in reference, count in candidate); precision divides it by the
candidate's token count, recall by the reference's (each at least 1), and
the F-measure is 2PR/(P+R), or 0 when P+R is 0. rouge_score itself is not
packaged for Debian; its tokenizer and scoring are written out below from
that definition, with Debian's python3-nltk (3.8) for the stemmer.

Run:  apt-get install -y python3-nltk
      /usr/bin/python3 runner/eval/testdata/expected_scores.py
It writes runner/eval/testdata/rouge_expected.json and porter_expected.txt
(every word of the Apache-2.0 and GPL-3 texts in /usr/share/common-licenses
with NLTK's stem, plus the words of the ROUGE cases).
"""
import collections
import json
import os
import re

from nltk.stem.porter import PorterStemmer

STEMMER = PorterStemmer()
HERE = os.path.dirname(os.path.abspath(__file__))


def tokens(text):
    text = re.sub(r"[^a-z0-9]+", " ", text.lower())
    out = []
    for tok in re.split(r"\s+", text):
        if len(tok) > 3:
            tok = STEMMER.stem(tok)
        if re.match(r"^[a-z0-9]+$", tok):
            out.append(tok)
    return out


def rouge1(candidate, reference):
    ref = collections.Counter(tokens(reference))
    cand = collections.Counter(tokens(candidate))
    overlap = sum(min(n, cand[t]) for t, n in ref.items())
    p = overlap / max(sum(cand.values()), 1)
    r = overlap / max(sum(ref.values()), 1)
    f = 2 * p * r / (p + r) if p + r > 0 else 0.0
    return {"precision": p, "recall": r, "fmeasure": f}


CASES = [
    ("offline model: you said: hello there", "offline model: you said: hello there"),
    ("The quick brown foxes jumped over the lazy dogs", "A quick brown fox jumps over the lazy dog"),
    ("I rolled a 16 sided die and got 13.", "I rolled a 16-sided die and got 13!"),
    ("Your order 42 was shipped yesterday.", "Order #42 has been shipped."),
    ("running runners run happily", "the runner ran, happiness running"),
    ("", "something expected"),
    ("something said", ""),
    ("", ""),
    ("the the the cat", "the cat sat on the mat"),
    ("Generalizations about relational databases are conditional", "generalization relate condition database"),
    ("Café déjà vu: naïve résumé", "cafe deja vu naive resume"),
    ("skies dying lying tying news innings", "sky die lie tie news inning"),
    ("I have turned off the bedroom light.", "I have turned off the bedroom light"),
    ("Paris is sunny, Oslo is cold.", "Paris is sunny and Oslo is cold."),
    ("You're welcome!", "You are welcome."),
    ("Billing can help you with your invoice; transferring you now.", "Transferring you to billing for your invoice question."),
]


def main():
    cases = [
        {"candidate": c, "reference": r, **rouge1(c, r)} for c, r in CASES
    ]
    with open(os.path.join(HERE, "rouge_expected.json"), "w") as f:
        json.dump(cases, f, indent=1)
        f.write("\n")
    words = set()
    for name in ("Apache-2.0", "GPL-3"):
        with open(os.path.join("/usr/share/common-licenses", name)) as f:
            words.update(re.sub(r"[^a-z0-9]+", " ", f.read().lower()).split())
    for c, r in CASES:
        words.update(re.sub(r"[^a-z0-9]+", " ", (c + " " + r).lower()).split())
    extra = ("caresses ponies ties caress cats feed agreed plastered bled "
             "motoring sing conflated troubled sized hopping tanned falling "
             "hissing fizzed failing filing happy sky relational conditional "
             "rational valenci hesitanci digitizer conformabli radicalli "
             "differentli vileli analogousli vietnamization predication "
             "operator feudalism decisiveness hopefulness callousness "
             "formaliti sensitiviti sensibiliti triplicate formative "
             "formalize electriciti electrical hopeful goodness revival "
             "allowance inference airliner gyroscopic adjustable defensible "
             "irritant replacement adjustment dependent adoption homologou "
             "communism activate angulariti homologous effective bowdlerize "
             "probate rate cease controll roll enjoy spy fly try tried flies "
             "spied dies lies ties analogi archaeologi beautifulli").split()
    words.update(extra)
    words = sorted(w for w in words if len(w) > 3)
    with open(os.path.join(HERE, "porter_expected.txt"), "w") as f:
        for w in words:
            f.write(f"{w} {STEMMER.stem(w)}\n")


if __name__ == "__main__":
    main()
