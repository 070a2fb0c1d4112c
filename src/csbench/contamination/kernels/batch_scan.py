"""The one door from the lexical scan (:class:`.scan.Scanner`) to the compiled kernels: a batch of
documents in, the n-gram key matches of the batch out (:class:`Matches`), either way the
documents come:

* :meth:`BatchScan.documents`: documents the scanner read and normalised itself (the
  per-document path), joined into one buffer and scanned by the n-gram kernel (both passes,
  :meth:`.ngram.KernelIndex.scan`);
* :meth:`BatchScan.piece`: a shard piece read by a fused reader, JSON lines (:mod:`.jsonl`) or a
  Parquet string column (:mod:`.columnar`), whose kernels fold the documents and hash their words
  while copying them; pass 2 only (:meth:`.ngram.KernelIndex.scan_words`).

The scanner verifies the matches and records the hits (:meth:`.scan.Scanner._record_matches`);
the matches, and so the tables, are the same either way.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, Iterator

import numpy as np

from ..corpus import COMPRESSED
from . import columnar, jsonl, ngram

BLOCK = jsonl.BLOCK               # bytes the fused JSON-lines reader reads per block


def available() -> bool:
    """True when the compiled n-gram kernel works (numba present, compiles, not disabled)."""
    return ngram.available()


def fused_available() -> bool:
    """True when the fused readers can be used too (their extraction kernel compiles and runs)."""
    return ngram.available() and jsonl.available()


@dataclass
class Matches:
    """The n-gram key matches of one batch of documents. Match r: the key at ``key_index[r]``
    among the sorted keys of the length in slot ``slots[r]`` starts at word ``starts[r]`` of the
    batch (the documents' words counted one after another; document d's first word is
    ``first_word[d]``). ``candidates``: the n-grams that passed the bit-table pre-filter.
    ``doc_bytes(d)``: document d, normalised; ``doc_id(d)``: its id (materialised only for the
    documents with matches). ``nbytes``, ``ndocs``, ``seconds``: text bytes before folding,
    documents, and CPU seconds spent on the batch here (the fused path; the per-document path leaves
    them to the scanner)."""
    starts: np.ndarray
    slots: np.ndarray
    key_index: np.ndarray
    candidates: int
    first_word: np.ndarray
    doc_bytes: Callable[[int], bytes]
    doc_id: Callable[[int], str]
    nbytes: int = 0
    ndocs: int = 0
    seconds: float = 0.0


class BatchScan:
    """The probe keys of a :class:`.scan.ProbeIndex` laid out for the kernels
    (:class:`.ngram.KernelIndex`), and the two ways of scanning a batch with them."""

    def __init__(self, lengths, keys: dict, table: np.ndarray, vocab: np.ndarray | None = None):
        self.index = ngram.KernelIndex(lengths, keys, table, vocab)

    def documents(self, ids: list[str], bufs: list[bytes]) -> Matches:
        """The matches of documents ``bufs`` (normalised: :func:`.hashing.normalise_bytes`)."""
        buf = b"\n".join(bufs + [bytes(ngram.PAD)])    # (pass 1 reads past a document)
        lens = np.fromiter((len(b) + 1 for b in bufs), dtype=np.int64, count=len(bufs))
        doc_end = np.cumsum(lens)
        doc_start = doc_end - lens
        ks, slots, js, ncand, wstart = self.index.scan(buf, doc_start, doc_end - 1)
        return Matches(ks, slots, js, ncand, wstart, bufs.__getitem__, ids.__getitem__)

    @staticmethod
    def fuses(fmt: str) -> bool:
        """True when pieces of this input format can take a fused reader."""
        return fmt in ("jsonl", "parquet") and jsonl.available()

    def piece(self, piece, fmt: str, text_field: str = "text", id_field: str | None = None,
              block: int = BLOCK, read_ahead: bool = False) -> Iterator[Matches] | None:
        """The matches of shard piece ``(path, start, end)`` batch by batch, read by the fused
        reader of ``fmt`` (documents, ids, bytes and errors as :func:`.corpus.iter_documents`
        gives them); None when the piece must take the per-document path (a Parquet text column
        that is not a string column: the error is reported there). ``read_ahead``: compressed
        JSON lines are decompressed in a second thread, a block ahead
        (:func:`.blocks._chunks_ahead`; plain files gain nothing from it). A batch must be used
        before the next is asked for."""
        if fmt == "jsonl":
            batches = jsonl.iter_batches(piece, text_field, id_field, block,
                                         read_ahead and piece[0].endswith(COMPRESSED))
        elif columnar.string_columns(piece[0], text_field, id_field):
            batches = columnar.iter_batches(piece, text_field, id_field)
        else:
            return None
        return self._words_scanned(batches)

    def _words_scanned(self, batches) -> Iterator[Matches]:
        for b in batches:
            t0 = time.process_time()
            ks, slots, js, ncand, wstart = self.index.scan_words(b.hw, b.wlo, b.whi)
            yield Matches(ks, slots, js, ncand, wstart, b.doc_bytes, b.doc_id, b.nbytes,
                          len(b.lo), b.seconds + time.process_time() - t0)
