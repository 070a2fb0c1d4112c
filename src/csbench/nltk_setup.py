"""Prepare an offline ``nltk_data`` directory holding WordNet 3.0 from Debian's packages.

``nltk.download`` cannot reach its servers here, so the Debian packages ``wordnet-base`` and
``wordnet-sense-index`` supply the database files; this module copies them (NLTK refuses
symlinks) under ``<target>/corpora/wordnet/`` and writes the ``lexnames`` file NLTK expects.

Run as ``python -m csbench.nltk_setup resources/nltk_data``.
"""
from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

# The 45 lexicographer files of WordNet 3.0, in number order (lexnames(5WN)).
LEXNAMES = (
    "adj.all adj.pert adv.all noun.Tops noun.act noun.animal noun.artifact noun.attribute "
    "noun.body noun.cognition noun.communication noun.event noun.feeling noun.food noun.group "
    "noun.location noun.motive noun.object noun.person noun.phenomenon noun.plant "
    "noun.possession noun.process noun.quantity noun.relation noun.shape noun.state "
    "noun.substance noun.time verb.body verb.change verb.cognition verb.communication "
    "verb.competition verb.consumption verb.contact verb.creation verb.emotion verb.motion "
    "verb.perception verb.possession verb.social verb.stative verb.weather adj.ppl"
).split()

DEBIAN_WORDNET = Path("/usr/share/wordnet")
PATTERNS = ("data.*", "index.*", "*.exc", "cntlist.rev")


def lexnames_text() -> str:
    """The ``lexnames`` file: ``NN<TAB>name<TAB>syntactic category`` per line."""
    cat = {"adj": 3, "adv": 4, "noun": 1, "verb": 2}
    return "".join(
        f"{i:02d}\t{name}\t{cat[name.split('.')[0]]}\n" for i, name in enumerate(LEXNAMES)
    )


def prepare(target: str | Path, source: str | Path = DEBIAN_WORDNET) -> Path:
    """Copy WordNet into ``target/corpora/wordnet`` (idempotent) and return that directory."""
    source = Path(source)
    dest = Path(target) / "corpora" / "wordnet"
    files = [p for pat in PATTERNS for p in sorted(source.glob(pat)) if p.is_file()]
    if not any(p.name == "data.noun" for p in files):
        raise FileNotFoundError(
            f"WordNet database not found in {source}: install the Debian packages "
            "wordnet-base and wordnet-sense-index"
        )
    dest.mkdir(parents=True, exist_ok=True)
    for p in files:
        out = dest / p.name
        if out.is_symlink():
            out.unlink()
        if not out.exists() or out.stat().st_size != p.stat().st_size:
            shutil.copyfile(p, out)
    (dest / "lexnames").write_text(lexnames_text())
    (dest / "LICENSE").write_text("WordNet 3.0 license: see /usr/share/doc/wordnet-base/copyright\n")
    return dest


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("target", help="nltk_data directory to create or update")
    ap.add_argument("--source", default=str(DEBIAN_WORDNET))
    args = ap.parse_args(argv)
    dest = prepare(args.target, args.source)
    print(f"WordNet ready in {dest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
