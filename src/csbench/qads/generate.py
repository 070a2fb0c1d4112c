"""Generate QADS questions: synonyms of the disambiguated sense, inflected and cased like the
original token, substituted one at a time (mode ``one``) or all together (mode ``all``)."""
from __future__ import annotations

import functools
import logging
import re

import pandas as pd

from ..config import default
from ..text import stem
from .domains import synset_domains
from .candidates import DEFAULT_MWES, DEFAULT_POS, candidates, load_nlp
from .wsd import Disambiguator, Target

log = logging.getLogger(__name__)
MODES = ("one", "all")
SUB_COLUMNS = ["id", "new_id", "token", "position", "token_index", "lemma", "pos", "tag", "synset",
               "score", "synonym", "method", "domains", "token_zipf", "synonym_zipf", "passed_over"]
ORDERS = ("wordnet", "zipf")
_GENERATION = default("qads.generation")  # the schema's defaults, for callers without a config
DEFAULT_ORDER, DEFAULT_MIN_ZIPF = _GENERATION["synonym_order"], _GENERATION["min_zipf"]


@functools.lru_cache(maxsize=200_000)
def zipf(text: str) -> float:
    """Zipf frequency of a word or phrase in English (wordfreq's bundled ``large`` list: log10 of
    occurrences per billion words; 0 = unseen). Never downloads: the lists ship in the wheel."""
    from wordfreq import zipf_frequency

    return zipf_frequency(text, "en", wordlist="large")


_VARIANT_RULES = [(r"our", "or"), (r"is(e|ing|ed|ation)", r"iz\1"), (r"ys(e|ing|ed)", r"yz\1"),
                  (r"([^aeiou])re$", r"\1er"), (r"ogue$", "og"), (r"ae", "e"), (r"oe", "e"),
                  (r"gement", "gment"), (r"(.)\1", r"\1"), (r"[^a-z]", "")]


def _skeleton(word: str) -> str:
    w = word.lower()
    for pat, rep in _VARIANT_RULES:
        w = re.sub(pat, rep, w)
    return w


def spelling_variant(a: str, b: str) -> bool:
    """True for British/American or hyphenation variants ("colour"/"color", "analyse"/"analyze",
    "centre"/"center", "judgement"/"judgment", "e-mail"/"email", "grey"/"gray")."""
    sa, sb = _skeleton(a), _skeleton(b)
    if sa == sb:
        return True
    if len(sa) == len(sb) >= 4:  # one vowel swapped ("grey"/"gray")
        diff = [(x, y) for x, y in zip(sa, sb) if x != y]
        return len(diff) == 1 and diff[0][0] in "aeiouy" and diff[0][1] in "aeiouy"
    return False


def _stems(name: str) -> set[str]:
    return {stem(w) for w in re.split(r"[_\-\s]+", name.lower()) if w}


def same_stem(a: str, b: str) -> bool:
    """True when two lemmas share a Porter stem or one's stem (3+ letters) starts the other
    ("running"/"runner", "direction"/"directional")."""
    sa, sb = _stems(a), _stems(b)
    if sa & sb:
        return True
    wa = [w for w in re.split(r"[_\-\s]+", a.lower()) if w]
    wb = [w for w in re.split(r"[_\-\s]+", b.lower()) if w]
    return any((len(s) >= 3 and w.startswith(s)) for s in sa for w in wb) or \
        any((len(s) >= 3 and w.startswith(s)) for s in sb for w in wa)


def synonyms(synset, lemma: str, hypernyms: bool = False, multiword: bool = False,
             min_count: int = 0) -> list[str]:
    """Other lemmas of ``synset`` (and optionally of its hypernyms), most frequent first.

    Same-stem variants (sharing a Porter stem with the original), proper-name lemmas and, unless
    ``multiword``, multi-word lemmas are dropped, and so are lemmas tagged fewer than
    ``min_count`` times in WordNet's sense-tagged corpora (rare words such as "cognize").
    """
    pool = [(l, 0) for l in synset.lemmas()]
    if hypernyms:
        pool += [(l, 1) for h in synset.hypernyms() for l in h.lemmas()]
    seen, ranked = set(), []
    for order, (lem, hyper) in enumerate(pool):
        name = lem.name()
        key = name.lower()
        if key in seen or key == lemma.lower() or name != key:
            continue
        if not multiword and ("_" in name or "-" in name):
            continue
        if same_stem(name, lemma) or lem.count() < min_count:
            continue
        seen.add(key)
        ranked.append((hyper, -lem.count(), order, name))
    return [r[-1] for r in sorted(ranked)]


def choose(synset, lemma: str, token: str, tag: str, order: str = DEFAULT_ORDER,
           min_zipf: float | None = DEFAULT_MIN_ZIPF,
           hypernyms: bool = False, multiword: bool = False, min_count: int = 0):
    """Pick the synonym of ``token`` (WordNet ``lemma``, Penn ``tag``) among the lemmas of ``synset``.

    Candidates are the other lemmas (then, with ``hypernyms``, the hypernyms' lemmas), minus the
    word itself, proper names, multi-word lemmas (unless ``multiword``), same-stem and spelling
    variants, lemmas tagged fewer than ``min_count`` times in WordNet, and lemmas whose inflected
    form equals the token. Each remaining lemma is inflected to ``tag``; those whose inflected form
    has a Zipf frequency below ``min_zipf`` are dropped. ``order="zipf"`` takes the one with the
    highest Zipf frequency (own lemmas before hypernyms, ties by WordNet count),
    ``order="wordnet"`` the one most often tagged in this sense (WordNet count; ties by Zipf).

    Returns ``(synonym or None, its Zipf frequency or None, passed_over)``: ``passed_over`` lists
    every other lemma as ``"<lemma>: <reason>"``.
    """
    if order not in ORDERS:
        raise ValueError(f"synonym order {order!r}: expected one of {ORDERS}")
    pool = [(l, 0) for l in synset.lemmas()]
    if hypernyms:
        pool += [(l, 1) for h in synset.hypernyms() for l in h.lemmas()]
    seen, ranked, passed = {lemma.lower()}, [], []
    for n, (lem, hyper) in enumerate(pool):
        name = lem.name()
        key = name.lower()
        if key in seen:
            continue
        seen.add(key)
        reason = None
        if name != key:
            reason = "proper name"
        elif not multiword and ("_" in name or "-" in name):
            reason = "multi-word"
        elif same_stem(name, lemma):
            reason = "same stem"
        elif spelling_variant(name, lemma):
            reason = "spelling variant"
        elif lem.count() < min_count:
            reason = f"WordNet count {lem.count()} < {min_count}"
        if reason:
            passed.append(f"{name}: {reason}")
            continue
        form = inflect(name, tag)
        if form.lower() == token.lower():
            passed.append(f"{name}: same form as the token")
            continue
        z = zipf(form)
        if min_zipf is not None and z < min_zipf:
            passed.append(f"{name}: Zipf {z:.2f} < {min_zipf}")
            continue
        key = (hyper, -z, -lem.count(), n) if order == "zipf" else (hyper, -lem.count(), -z, n)
        ranked.append((key, name, form, z))
    if not ranked:
        return None, None, passed
    ranked.sort()
    passed += [f"{name}: ranked lower (Zipf {z:.2f}, WordNet count {key[2 if order == 'zipf' else 1] * -1})"
               for key, name, _, z in ranked[1:]]
    _, _, form, z = ranked[0]
    return match_case(form, token), z, passed


def inflect(name: str, tag: str) -> str:
    """Inflect a WordNet lemma (``_`` joined) to the Penn ``tag`` of the token it replaces.

    The head word is inflected: the first word of a verb phrase, the last word otherwise. Forms
    come from lemminflect's dictionary; adjectives/adverbs without a dictionary comparative get
    "more"/"most", already comparative words and plural-looking nouns are left alone, and only
    then is lemminflect's out-of-vocabulary rule used.
    """
    from lemminflect import getAllInflections, getAllLemmas, getInflection

    parts = name.split("_")
    head = 0 if tag.startswith("VB") else len(parts) - 1
    word = parts[head]
    if tag in ("NN", "VB", "JJ", "RB", "NNP"):
        return " ".join(parts)
    upos = {"J": "ADJ", "R": "ADV", "N": "NOUN", "V": "VERB"}.get(tag[:1])
    if upos is None:
        return " ".join(parts)
    if upos in ("ADJ", "ADV"):
        base = getAllLemmas(word, upos).get(upos, (word,))[0]
        if base != word:  # already comparative/superlative (e.g. "bigger")
            return " ".join(parts)
    forms = getAllInflections(word, upos).get(tag)
    if forms:
        parts[head] = forms[0]
    elif tag in ("JJR", "RBR", "JJS", "RBS"):
        parts[head] = ("more " if tag.endswith("R") else "most ") + word
    elif tag == "NNS" and word.endswith("s"):
        pass
    else:
        oov = getInflection(word, tag=tag)
        if oov:
            parts[head] = oov[0]
    return " ".join(parts)


def match_case(new: str, original: str) -> str:
    if len(original) > 1 and original.isupper():
        return new.upper()
    if original[:1].isupper():
        return new[:1].upper() + new[1:]
    return new


def substitute(text: str, edits: list[tuple[int, int, str]]) -> str:
    """Apply ``(start, end, replacement)`` edits (non-overlapping) to ``text``."""
    for start, end, rep in sorted(edits, reverse=True):
        text = text[:start] + rep + text[end:]
    return text


def generate(questions: pd.DataFrame, wsd: Disambiguator, modes=MODES, pos=DEFAULT_POS,
             mwes=DEFAULT_MWES, context: str = "question", hypernyms: bool = False,
             multiword: bool = False, min_score: float | None = None, min_count: int = 0, nlp=None,
             batch_size: int = 256, order: str = DEFAULT_ORDER,
             min_zipf: float | None = DEFAULT_MIN_ZIPF):
    """Return ``(substitutions DataFrame, {mode: DataFrame of new question rows})``.

    ``questions`` has the squad_v2 table columns; new rows keep title, context and answers and get
    ids ``<original>-<n>``.
    """
    nlp = nlp or load_nlp()
    docs = list(nlp.pipe(questions["question"].tolist(), batch_size=batch_size))
    cands = [candidates(d, pos, mwes) for d in docs]
    targets, owners = [], []
    for qi, (row, cs) in enumerate(zip(questions.itertuples(index=False), cands)):
        ctx = row.question if context == "question" else f"{row.question} {row.context}"
        for c in cs:
            targets.append(Target(c.lemma, c.wn_pos, ctx, c.text))
            owners.append((qi, c))
    log.info("%d questions, %d candidates", len(questions), len(targets))
    choices = wsd.disambiguate(targets)
    subs, per_q = [], [[] for _ in range(len(questions))]
    qrows = list(questions.itertuples(index=False))
    for (qi, c), ch in zip(owners, choices):
        syn, syn_z, passed = None, None, []
        if ch.synset is not None and (min_score is None or ch.score >= min_score):
            syn, syn_z, passed = choose(ch.synset, c.lemma, c.text, c.tag, order, min_zipf,
                                        hypernyms, multiword, min_count)
        rec = {"id": qrows[qi].id, "new_id": None, "token": c.text, "position": c.start,
               "token_index": c.index, "lemma": c.lemma, "pos": c.pos, "tag": c.tag,
               "synset": ch.synset.name() if ch.synset is not None else None,
               "score": ch.score, "synonym": syn, "method": wsd.method,
               "domains": synset_domains(ch.synset) if ch.synset is not None else [],
               "token_zipf": zipf(c.text.lower()), "synonym_zipf": syn_z, "passed_over": passed}
        subs.append(rec)
        if syn is not None:
            per_q[qi].append(rec)
    out = {}
    for mode in modes:
        rows = []
        for qi, recs in enumerate(per_q):
            if not recs:
                continue
            base = qrows[qi]._asdict()
            edits = [(r["position"], r["position"] + len(r["token"]), r["synonym"]) for r in recs]
            if mode == "one":
                for n, (r, e) in enumerate(zip(recs, edits), start=1):
                    r["new_id"] = f"{base['id']}-{n}"
                    rows.append({**base, "id": r["new_id"],
                                 "question": substitute(base["question"], [e])})
            else:
                rows.append({**base, "id": f"{base['id']}-1",
                             "question": substitute(base["question"], edits)})
        out[mode] = pd.DataFrame(rows, columns=list(questions.columns))
    return pd.DataFrame(subs, columns=SUB_COLUMNS), out
