"""Blocks of whole lines for the fused JSON-lines reader: a shard piece read (and decompressed)
into reused buffers, cut at the last newline of each block (:func:`_chunks`), optionally one
block ahead in a second thread (:func:`_chunks_ahead`)."""
from __future__ import annotations

import os
from typing import Iterator

from .. import corpus as C


def _chunks(path: str, start: int, end: int, block: int,
            buffers: int = 1) -> Iterator[tuple[int, bytearray, int]]:
    """(file offset, buffer, n) blocks: ``buffer[:n]`` holds the whole lines that start in
    [start, end) (end -1: to the end of the file), as :func:`.corpus._lines` delimits them.
    Buffers are reused in turn (read into; the rest of a cut line copied to the front of the
    next), so a block must be used before ``buffers - 1`` more are asked for."""
    with C.open_binary(path) as fh:
        pos = 0
        if start > 0:
            fh.seek(start - 1)
            pos = start - 1 + len(fh.readline())   # finish the line that straddles the cut
        ring = [bytearray(block + (1 << 16)) for _ in range(buffers)]
        turn = 0
        buf = ring[0]
        filled = 0                                 # bytes in buf: carried over, then read
        while end < 0 or pos < end:
            if filled + block > len(buf):          # a line longer than the block: grow
                new = bytearray(max(2 * len(buf), filled + block))
                new[:filled] = buf[:filled]
                buf = ring[turn] = new
            with memoryview(buf) as mv:
                got = fh.readinto(mv[filled:filled + block])
            filled += got
            if got:
                cut = buf.rfind(b"\n", 0, filled) + 1
                if cut == 0:
                    continue                       # no line end yet: read on
            else:
                cut = filled                       # the last line, without a newline
                if not cut:
                    return
            if end >= 0 and pos + cut > end:       # stop after the line holding byte end - 1
                j = buf.find(b"\n", end - 1 - pos, cut)
                yield pos, buf, cut if j < 0 else j + 1
                return
            yield pos, buf, cut
            pos += cut
            if not got:
                return
            turn = (turn + 1) % buffers
            nxt = ring[turn]
            rest = filled - cut
            if len(nxt) < rest + block:
                nxt = ring[turn] = bytearray(max(len(nxt), rest + block))
            nxt[:rest] = buf[cut:filled]           # the rest of the cut line, to the front
            buf = nxt
            filled = rest


def _chunks_ahead(path: str, start: int, end: int,
                  block: int) -> Iterator[tuple[int, bytearray, int]]:
    """:func:`_chunks` with reading and decompression in a second thread, one block ahead of
    the caller: while the caller works on one block (the kernels release the GIL) the thread
    fills the next, so a job takes about the longer of the two times rather than their sum.
    Errors are raised in the caller where the blocks before them end; a caller that stops early
    stops the thread."""
    import queue
    import threading

    q: queue.Queue = queue.Queue(maxsize=1)
    stop = threading.Event()

    def put(item) -> bool:
        while not stop.is_set():
            try:
                q.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        # 3 buffers: one the caller holds, one in the queue, one being filled
        blocks = _chunks(path, start, end, block, buffers=3)
        try:
            for item in blocks:
                if not put(("block", item)):
                    return
            put(("end", None))
        except BaseException as exc:  # noqa: BLE001 - handed to the caller, raised there
            put(("error", exc))
        finally:
            blocks.close()                      # (closes the file now, not when collected)

    t = threading.Thread(target=produce, name=f"read {os.path.basename(path)}", daemon=True)
    t.start()
    try:
        while True:
            kind, item = q.get()
            if kind == "end":
                return
            if kind == "error":
                raise item
            yield item
    finally:
        stop.set()
        t.join()
