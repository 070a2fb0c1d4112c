"""The compiled (numba) kernels of the lexical scan, behind one door for the scanner:
:mod:`.batch_scan` (a batch of documents in, its n-gram key matches out).

By trade: :mod:`.ngram` (the n-gram scan kernel, both passes), :mod:`.jsonl` and
:mod:`.columnar` (the fused readers of JSON lines and Parquet string columns), with
:mod:`.extract` (the per-line extraction kernel), :mod:`.json_syntax` (the JSON grammar),
:mod:`.json_text` (the folding text copy), :mod:`.folding` and :mod:`.runs` (the folding table
and the run cache for non-ASCII text) and :mod:`.blocks` (blocks of whole lines); :mod:`.simd`
(vector intrinsics) and :mod:`.jit` (how every kernel is compiled). Without numba the scanner
keeps its numpy path (:mod:`csbench.contamination.scan`), with identical results.
"""
