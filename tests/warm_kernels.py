"""Compile the contamination scan kernels into numba's on-disk cache once, before the demo runs.

``python tests/warm_kernels.py``: scans every corpus of the demo config (JSON lines plain, gzip
and zstd, Parquet, plain text) with a small probe table, which compiles every kernel and
signature a demo scan job uses. From a fresh clone the cache is empty, and without this each of
the two demo runs' first scan jobs compiled the same kernels side by side (about 26 CPU s each,
four times over). The cache is numba's own (``cache=True`` in csbench.contamination.kernels.jit),
keyed by the kernels' sources: what a scan computes does not change, only who compiles first.
"""
from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def main() -> None:
    import pandas as pd
    import yaml

    from csbench.contamination.corpus import plan_shards
    from csbench.contamination.scan import ProbeIndex, Scanner

    cfg = yaml.safe_load((REPO / "resources/demo/config.yaml").read_text())["contamination"]
    probes = pd.DataFrame({"benchmark": ["b"], "item_id": ["1"], "probe": ["sentence"],
                           "kind": ["sentence"],
                           "text": ["the quick brown fox jumps over the lazy dog again"]})
    index = ProbeIndex(probes, n=5, min_words=3)
    for corpus in cfg["corpora"].values():
        files = sorted(str(f) for pattern in corpus["paths"] for f in REPO.glob(pattern))
        for shard in plan_shards(files, corpus["format"], 1 << 20):
            Scanner(index).scan_pieces(shard, corpus["format"], corpus.get("text_field", "text"),
                                       corpus.get("id_field"))


if __name__ == "__main__":
    sys.exit(main())
