"""Lexical contamination scan (methods ``exact`` and ``ngram``) over a stream of documents.

Benchmark probes (one row per text to look for: ``benchmark, item_id, probe, kind, text``, kind
``full`` or ``part``) are turned into hash keys:

* ``ngram``: every word n-gram of a full probe; a full probe shorter than n (but at least
  ``min_words`` long) counts as one n-gram, found when it occurs whole;
* ``exact``: the first n-gram of a probe (its first ``min_words`` words when shorter) is an
  anchor; a hit is then extended word by word. Hashing at two lengths only keeps the scan fast. A full probe found whole is an exact hit; so is an item whose parts
  (for WinoGrande, the text before and after the blank) occur in order in one document, each
  within ``max_gap`` words of the previous (the blank's filler), whatever fills the gap.

Documents are batched into buffers of about ``batch_bytes``; each batch is tokenised and hashed
with numpy (:mod:`.hashing`), n-grams that cross a document boundary are dropped, and so are
those with a word that no probe has (:attr:`ProbeIndex.vocab`, a bit table of the probes' word
hashes); candidates pass a bit-table pre-filter and a binary search, and every surviving hit is
verified word by word, so a hash collision can never report a false match. Memory depends on
the probes and the batch size only.

With the compiled engine (numba) the batches go through the kernels of :mod:`.kernels` instead,
all through one door, :class:`.kernels.batch_scan.BatchScan`. :meth:`Scanner.scan_pieces` (what
the workflow runs) takes shard pieces instead of documents: JSON lines and Parquet string columns
with the compiled engine go through the fused readers (blocks of raw bytes to folded document
buffers in one numba kernel, straight into the scan kernel), everything else through
:meth:`Scanner.scan`; results and counts are identical.
"""
from __future__ import annotations

import logging
import time
from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from . import corpus
from . import hashing as H
from .gather import SHARD_COLUMNS
from .kernels import batch_scan

log = logging.getLogger(__name__)
EVIDENCE_CHARS = 300
TABLE_BITS = 22


@dataclass
class Probe:
    benchmark: str
    item_id: str
    probe: str
    kind: str
    words: list[bytes]
    hashes: np.ndarray


class ProbeIndex:
    """Hash keys of all probes, per n-gram length, with a shared bit-table pre-filter."""

    def __init__(self, probes: pd.DataFrame, n: int = 13, min_words: int = 8,
                 methods=("exact", "ngram"), max_gap: int = 4):
        self.n, self.min_words, self.methods = n, min_words, tuple(methods)
        self.max_gap = max_gap
        self.probes: list[Probe] = []
        for row in probes.itertuples(index=False):
            buf = H.normalise_bytes(H.fold(str(row.text)).encode("utf-8"))
            s, e, h = H.tokenise(buf)
            words = [buf[a:b] for a, b in zip(s, e)]
            self.probes.append(Probe(str(row.benchmark), str(row.item_id), str(row.probe),
                                     str(row.kind), words, h))
        parts = defaultdict(list)         # (benchmark, item) -> part probe indices, in order
        keys = defaultdict(list)          # length -> [(hash, probe, pos)]
        for i, p in enumerate(self.probes):
            m = len(p.words)
            if p.kind == "part":
                if "exact" in methods and m:
                    parts[(p.benchmark, p.item_id)].append(i)
                continue
            if m < min_words:
                continue
            if m < n:    # anchored by its first min_words words, then verified whole
                keys[min_words].append((H.sequence_hash(p.hashes[:min_words]), i, 0))
            elif "ngram" in methods:
                g = H.ngram_hashes(H.ngram_prefix(p.hashes), n)
                keys[n].extend((int(x), i, j) for j, x in enumerate(g))
            else:
                keys[n].append((H.sequence_hash(p.hashes[:n]), i, 0))
        # parts rule: two parts (before and after the blank); the longer one, if it has at least
        # min_words words, is the anchor searched for; the other is checked next to it
        self.parts: dict[int, tuple[int, int]] = {}    # anchor probe -> (left, right)
        for (bench, item), idxs in parts.items():
            if len(idxs) != 2:
                continue
            anchor = max(idxs, key=lambda i: len(self.probes[i].words))
            m = len(self.probes[anchor].words)
            if m < min_words:
                continue
            self.parts[anchor] = (idxs[0], idxs[1])
            L = n if m >= n else min_words
            keys[L].append((H.sequence_hash(self.probes[anchor].hashes[:L]), anchor, 0))
        self.table = np.zeros(1 << TABLE_BITS, dtype=bool)
        self.keys: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = {}
        for L, rows in keys.items():
            arr = np.array([r[0] for r in rows], dtype=np.uint64)
            order = np.argsort(arr, kind="stable")
            arr = arr[order]
            probe = np.array([r[1] for r in rows], dtype=np.int64)[order]
            pos = np.array([r[2] for r in rows], dtype=np.int64)[order]
            uniq, first = np.unique(arr, return_index=True)
            bounds = np.append(first, len(arr))
            self.keys[L] = (uniq, bounds, probe, pos)
            self.table[(uniq >> np.uint64(64 - TABLE_BITS)).astype(np.int64)] = True
        self.lengths = sorted(self.keys)
        # every word of every key is a probe word: a bit table of the probes' word hashes (about
        # 32 bits per distinct word, so about 3 % of other words pass) lets the scan skip all
        # n-grams that contain a word no probe has
        words = np.unique(np.concatenate([p.hashes for p in self.probes] + [np.zeros(0, np.uint64)])
                          .astype(np.uint64))
        bits = int(min(24, max(12, np.ceil(np.log2(max(len(words), 1) * 32)))))
        self.vocab = np.zeros(1 << bits, dtype=bool)
        self.vocab[(words >> np.uint64(64 - bits)).astype(np.int64)] = True
        self.vocab_shift = np.uint64(64 - bits)

    def n_positions(self, i: int) -> int:
        m = len(self.probes[i].words)
        return 1 if m < self.n else m - self.n + 1


@dataclass
class Evidence:
    doc_id: str
    offset: int
    text: str


@dataclass
class ProbeResult:
    positions: set = field(default_factory=set)
    span: int = 0
    span_ev: Evidence | None = None
    exact_count: int = 0
    exact_ev: Evidence | None = None
    hits: int = 0


class Scanner:
    """Scan document batches against a :class:`ProbeIndex`; collect per-probe results."""

    def __init__(self, index: ProbeIndex, batch_bytes: int = 1 << 18, engine: str = "auto"):
        """``engine``: ``auto`` (the compiled kernels of :mod:`.kernels` when numba works, else
        numpy), ``numba`` (error without it) or ``numpy``. Both give identical results."""
        self.index = index
        self.batch_bytes = batch_bytes
        if engine not in ("auto", "numba", "numpy"):
            raise ValueError(f"unknown scan engine {engine!r}")
        use = engine == "numba" or (engine == "auto" and batch_scan.available())
        if engine == "numba" and not batch_scan.available():
            raise RuntimeError("scan engine 'numba' requested but the numba kernel is unavailable")
        self.compiled = (batch_scan.BatchScan(index.lengths, index.keys, index.table, index.vocab)
                         if use and index.lengths else None)
        self.engine = "numba" if self.compiled is not None else "numpy"
        self.results: dict[int, ProbeResult] = defaultdict(ProbeResult)
        self.parts_ev: dict[tuple, Evidence] = {}
        self.parts_count: dict[tuple, int] = defaultdict(int)
        self.bytes = 0
        self.docs = 0
        self.candidates = 0
        self.seconds = 0.0

    # -- streaming -------------------------------------------------------------------------
    def scan(self, documents) -> "Scanner":
        ids: list[str] = []
        bufs: list[bytes] = []
        size = 0
        norm = H.normalise_bytes
        batch = self._scan_compiled_batch if self.compiled is not None else self._scan_numpy_batch
        limit = self.batch_bytes
        nbytes = ndocs = 0
        for doc_id, text in documents:
            n = len(text)
            nbytes += n
            ndocs += 1
            ids.append(doc_id)
            bufs.append(norm(text))
            size += n + 1
            if size >= limit:
                batch(ids, bufs)
                ids, bufs, size = [], [], 0
        if bufs:
            batch(ids, bufs)
        self.bytes += nbytes
        self.docs += ndocs
        return self

    def scan_pieces(self, shard, fmt: str, text_field: str = "text", id_field: str | None = None,
                    block: int = batch_scan.BLOCK, max_bytes: int | None = None,
                    read_ahead: bool = False, progress=None) -> "Scanner":
        """Scan a shard's pieces ``(path, start, end)``. With the compiled engine JSON lines and
        Parquet string columns take the fused readers (:meth:`.kernels.batch_scan.BatchScan.piece`:
        raw bytes or Arrow buffers to folded batches, no Python object per document); everything
        else goes through :func:`.corpus.shard_documents` and :meth:`scan`. Tables and counts
        are identical either way. ``max_bytes`` (benchmarks) stops after the block or document
        in which that many text bytes were scanned. ``read_ahead``: compressed JSON lines are
        decompressed in a second thread, a block ahead of the scan; same results. ``progress``:
        a :class:`csbench.logs.Progress` over the shard's on-disk bytes
        (:func:`.corpus.shard_size`), advanced as pieces are scanned (:class:`_ShardProgress`)."""
        track = _ShardProgress(progress, shard)
        if self.compiled is None or not self.compiled.fuses(fmt):
            docs = track.documents(fmt, text_field, id_field)
            return self.scan(docs if max_bytes is None else _upto(docs, max_bytes))
        for piece in shard:
            piece = tuple(piece)
            track.next_piece(piece)
            batches = self.compiled.piece(piece, fmt, text_field, id_field, block, read_ahead)
            if batches is None:
                docs = corpus.iter_documents(piece, fmt, text_field, id_field)
                self.scan(docs if max_bytes is None else _upto(docs, max_bytes - self.bytes))
                track.piece_done()
                continue
            for m in batches:
                t0 = time.process_time()
                self._record_matches(m)
                self.seconds += time.process_time() - t0 + m.seconds
                self.bytes += m.nbytes
                self.docs += m.ndocs
                track.text(m.nbytes)
                if max_bytes is not None and self.bytes >= max_bytes:
                    return self
            track.piece_done()
        return self

    def _scan_compiled_batch(self, ids: list[str], bufs: list[bytes]) -> None:
        """One batch of normalised documents, by the compiled kernels."""
        t0 = time.process_time()
        self._record_matches(self.compiled.documents(ids, bufs))
        self.seconds += time.process_time() - t0

    def _record_matches(self, m: batch_scan.Matches) -> None:
        """The hits of the compiled kernels' matches: only the documents with matches are
        materialised (``m.doc_bytes(d)``: normalised, lower-cased; ``m.doc_id(d)``) and split
        into words again (numpy) for verification and evidence."""
        ks, slots, js, wstart = m.starts, m.slots, m.key_index, m.first_word
        doc_bytes, doc_id = m.doc_bytes, m.doc_id
        self.candidates += int(m.candidates)
        if len(ks):
            idx = self.index
            # a mini-batch of the documents with matches, word indices mapped into it
            kdoc = np.searchsorted(wstart, ks, side="right") - 1
            docs = np.unique(kdoc).tolist()
            sub = [doc_bytes(d) for d in docs]
            sub_buf = b"\n".join(sub)
            sub_lens = np.fromiter((len(b) + 1 for b in sub), dtype=np.int64, count=len(sub))
            sub_start = np.cumsum(sub_lens) - sub_lens
            starts, ends = H.word_spans(sub_buf)
            word_doc = np.searchsorted(sub_start, starts, side="right") - 1
            sub_wstart = np.searchsorted(word_doc, np.arange(len(docs)), side="left")
            shift = dict(zip(docs, (sub_wstart - wstart[docs]).tolist()))
            order = np.lexsort((ks, slots))        # as the numpy path: by length, then position
            hits = []
            for k, sl, jj, d in zip(ks[order].tolist(), slots[order].tolist(),
                                    js[order].tolist(), kdoc[order].tolist()):
                L = idx.lengths[sl]
                _, bounds, probe, pos = idx.keys[L]
                for r in range(bounds[jj], bounds[jj + 1]):
                    hits.append((int(probe[r]), int(pos[r]), k + shift[d], L))
            self._record(hits, sub_buf, starts, ends, word_doc, sub_start,
                         [doc_id(d) for d in docs])

    def _scan_numpy_batch(self, ids: list[str], bufs: list[bytes]) -> None:
        """One batch of normalised documents, by numpy (the engine without numba)."""
        t0 = time.process_time()
        idx = self.index
        buf = b"\n".join(bufs)
        lens = np.fromiter((len(b) + 1 for b in bufs), dtype=np.int64, count=len(bufs))
        doc_start = np.concatenate(([0], np.cumsum(lens)[:-1]))
        starts, ends, wh = H.tokenise(buf)
        if len(wh) == 0:
            self.seconds += time.process_time() - t0
            return
        word_doc = np.searchsorted(doc_start, starts, side="right") - 1
        prefix = H.ngram_prefix(wh)
        hits = []   # (probe, pos, word index, length)
        shift = np.uint64(64 - TABLE_BITS)
        # words not in the probes' vocabulary, counted: n-gram k has none when out[k + L] == out[k]
        out = np.concatenate(([0], np.cumsum(~idx.vocab[(wh >> idx.vocab_shift).astype(np.intp)])))
        for L in idx.lengths:
            g = H.ngram_hashes(prefix, L)
            if len(g) == 0:
                continue
            cand = np.flatnonzero(idx.table[(g >> shift).astype(np.intp)]
                                  & (out[L:] == out[:len(out) - L]))
            if len(cand) == 0:
                continue
            cand = cand[word_doc[cand] == word_doc[cand + L - 1]]
            uniq, bounds, probe, pos = idx.keys[L]
            gv = g[cand]
            j = np.searchsorted(uniq, gv)
            j[j == len(uniq)] = 0
            ok = uniq[j] == gv
            self.candidates += int(len(cand))
            for k, jj in zip(cand[ok].tolist(), j[ok].tolist()):
                for r in range(bounds[jj], bounds[jj + 1]):
                    hits.append((int(probe[r]), int(pos[r]), k, L))
        if hits:
            self._record(hits, buf, starts, ends, word_doc, doc_start, ids)
        self.seconds += time.process_time() - t0

    # -- hits --------------------------------------------------------------------------------
    def _evidence(self, buf, starts, ends, doc_start, ids, d, k0, k1) -> Evidence:
        a, b = int(starts[k0]), int(ends[k1])
        text = buf[a:min(b, a + 4 * EVIDENCE_CHARS)].decode("utf-8", errors="replace")
        return Evidence(ids[d], a - int(doc_start[d]), text[:EVIDENCE_CHARS])

    def _record(self, hits, buf, starts, ends, word_doc, doc_start, ids) -> None:
        idx = self.index
        nw = len(starts)

        def word(k):
            return buf[starts[k]:ends[k]]

        chains = defaultdict(list)          # (probe, doc) -> [(pos, k)]

        def same(k, ws):
            return (0 <= k and k + len(ws) <= nw and word_doc[k] == word_doc[k + len(ws) - 1]
                    and all(word(k + i) == w for i, w in enumerate(ws)))

        for p, pos, k, L in hits:
            pr = idx.probes[p]
            if [word(k + i) for i in range(L)] != pr.words[pos:pos + L]:
                continue                     # hash collision
            d = int(word_doc[k])
            m = len(pr.words)
            whole = pos == 0 and (m <= L or same(k + L, pr.words[L:]))
            if pr.kind == "part":
                if whole:
                    self._parts_hit(p, k, d, same, buf, starts, ends, word_doc, doc_start, ids)
                continue
            res = self.results[p]
            res.hits += 1
            if whole and "exact" in idx.methods:
                res.exact_count += 1
                if res.exact_ev is None:
                    res.exact_ev = self._evidence(buf, starts, ends, doc_start, ids, d, k,
                                                  k + m - 1)
            if "ngram" in idx.methods and (m >= idx.n or whole):
                res.positions.add(pos)
                chains[(p, d)].append((pos, k))
        for (p, d), lst in chains.items():
            lst = sorted(set(lst), key=lambda t: t[1])
            L = min(len(idx.probes[p].words), idx.n)
            best, best_end, run = 0, 0, 0
            prev = None
            for i, (pos, k) in enumerate(lst):
                run = run + 1 if prev is not None and pos == prev[0] + 1 and k == prev[1] + 1 else 1
                if run > best:
                    best, best_end = run, i
                prev = (pos, k)
            span = best + L - 1
            res = self.results[p]
            if span > res.span:
                k_end = lst[best_end][1]
                k_start = k_end - best + 1
                res.span = span
                res.span_ev = self._evidence(buf, starts, ends, doc_start, ids, d, k_start,
                                             k_end + L - 1)

    def _parts_hit(self, anchor, k, d, same, buf, starts, ends, word_doc, doc_start, ids) -> None:
        """The anchor part matched at word k: look for the other part within max_gap words."""
        idx = self.index
        left, right = idx.parts[anchor]
        lw, rw = idx.probes[left].words, idx.probes[right].words
        for gap in range(idx.max_gap + 1):
            k0 = k if anchor == left else k - gap - len(lw)
            k1 = k0 + len(lw) + gap
            if k0 >= 0 and same(k0, lw) and same(k1, rw) and word_doc[k0] == d == word_doc[k1]:
                pr = idx.probes[anchor]
                key = (pr.benchmark, pr.item_id)
                self.parts_count[key] += 1
                if key not in self.parts_ev:
                    self.parts_ev[key] = self._evidence(buf, starts, ends, doc_start, ids, d, k0,
                                                        k1 + len(rw) - 1)
                return

    # -- output ------------------------------------------------------------------------------
    def table(self) -> pd.DataFrame:
        """One row per (probe, method) with a hit; ``probe`` is ``parts`` for the parts rule."""
        idx = self.index
        rows = []
        for p, res in sorted(self.results.items()):
            pr = idx.probes[p]
            base = dict(benchmark=pr.benchmark, item_id=pr.item_id, probe=pr.probe)
            if res.positions:
                ev = res.span_ev
                rows.append(dict(base, method="ngram", positions=sorted(res.positions),
                                 n_positions=idx.n_positions(p), span=res.span, count=res.hits,
                                 score=np.nan, doc_id=ev.doc_id, offset=ev.offset, text=ev.text))
            if res.exact_count:
                ev = res.exact_ev
                rows.append(dict(base, method="exact", positions=[], n_positions=1,
                                 span=len(pr.words), count=res.exact_count, score=np.nan,
                                 doc_id=ev.doc_id, offset=ev.offset, text=ev.text))
        for (bench, item), ev in sorted(self.parts_ev.items()):
            rows.append(dict(benchmark=bench, item_id=item, probe="parts", method="exact",
                             positions=[], n_positions=1, span=0,
                             count=self.parts_count[(bench, item)], score=np.nan,
                             doc_id=ev.doc_id, offset=ev.offset, text=ev.text))
        return pd.DataFrame(rows, columns=SHARD_COLUMNS)

    def stats(self) -> dict:
        return dict(documents=self.docs, bytes=self.bytes, candidates=self.candidates,
                    seconds=round(self.seconds, 3),
                    mb_per_s=round(self.bytes / 1e6 / self.seconds, 1) if self.seconds else None)


class _ShardProgress:
    """Drives a progress counter in on-disk bytes through a shard's pieces: exact at the end of
    each piece; within an uncompressed piece the text bytes scanned so far stand in (a lower
    bound: a line holds its text and more), within a compressed one nothing moves until it ends."""

    def __init__(self, progress, shard):
        self.progress = progress
        self.shard = [tuple(p) for p in shard]
        self.finished = 0
        self.size = 0
        self.plain = False
        self.seen = 0

    def next_piece(self, piece) -> None:
        self.size = corpus.shard_size([piece])
        self.plain = not str(piece[0]).endswith(corpus.COMPRESSED)
        self.seen = 0

    def text(self, nbytes: int) -> None:
        if self.progress is not None and self.plain:
            self.seen += nbytes
            self.progress.set(self.finished + min(self.seen, self.size))

    def piece_done(self) -> None:
        self.finished += self.size
        self.size = self.seen = 0
        if self.progress is not None:
            self.progress.set(self.finished)

    def documents(self, fmt, text_field, id_field):
        """The documents of the shard (as :func:`.corpus.shard_documents`), counted."""
        for piece in self.shard:
            self.next_piece(piece)
            for doc in corpus.iter_documents(piece, fmt, text_field, id_field):
                if self.progress is not None:
                    self.text(len(doc[1]))
                yield doc
            self.piece_done()


def _upto(documents, max_bytes: int):
    n = 0
    for doc in documents:
        yield doc
        n += len(doc[1])
        if n >= max_bytes:
            return
