"""Batching for the local engine: the batch size (fixed, or automatic: the largest that fits, up
to ``max_batch_size``, halved on out-of-memory errors) and, on CPU with the automatic size, rows
weighted by their length."""
from __future__ import annotations

import logging

log = logging.getLogger(__name__)

# CPU, automatic batch size: a batch holds at most 32 rows and about 32 * CPU_ROW_TOKENS tokens.
# Measured on the 20Q few-shot prompts (~200 tokens; SmolLM2-135M and Gemma-3-270m, 1 and 2
# threads): 8-16 rows per batch ran 1.15-1.2x faster than 32 (bench/lm_batch_tokens.py).
CPU_ROW_TOKENS = 100


def is_oom(exc: BaseException) -> bool:
    """Whether an exception is an out-of-memory error (of any device)."""
    import torch

    oom_types = tuple(t for t in (getattr(torch, "OutOfMemoryError", None),
                                  getattr(torch.cuda, "OutOfMemoryError", None)) if t)
    return isinstance(exc, oom_types) or "out of memory" in str(exc).lower()


def free_memory() -> None:
    import gc

    import torch

    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


class Batcher:
    """Runs work in batches (``stats``: the engine's statistics; ``oom_backoffs`` is counted)."""

    def __init__(self, batch_size: int | str, max_batch_size: int, device_type: str,
                 stats: dict):
        if batch_size != "auto":
            batch_size = int(batch_size)
            if batch_size < 1:
                raise ValueError("batch_size must be >= 1 or 'auto'")
        self.batch_size = batch_size
        self.max_batch_size = int(max_batch_size)
        self.device_type = device_type
        self.stats = stats
        self.auto_size: int | None = None  # the automatic size after out-of-memory backoff

    def size(self) -> int:
        """The batch size to start with (rows, or groups for shared prefixes)."""
        if self.batch_size != "auto":
            return int(self.batch_size)
        if self.auto_size is not None:
            return self.auto_size
        if self.device_type == "cpu":
            return min(self.max_batch_size, 32)
        return self.max_batch_size

    def row_weight(self, row) -> float:
        """A row's share of a batch: 1, except on CPU with the automatic batch size, where a row
        counts as one per CPU_ROW_TOKENS tokens, so a batch of long rows holds fewer of them
        (the 32-row CPU batch is then at most ~32 * CPU_ROW_TOKENS tokens)."""
        if self.batch_size != "auto" or self.device_type != "cpu":
            return 1
        return max(1.0, len(row.tokens) / CPU_ROW_TOKENS)

    def run(self, units, fn, weight, fallback=None, count=None) -> None:
        """Run ``fn`` on consecutive chunks of ``units`` of total weight <= the batch size,
        halving the batch size on out-of-memory errors when it is automatic (a single unit
        that still does not fit goes to ``fallback``, e.g. a shared group run unshared); progress
        is counted by ``count`` (default: ``weight``)."""
        from ..logs import progress

        bs = self.size()
        count = count or weight
        prog = progress(sum(count(u) for u in units), "LM scoring", unit="rows")
        i = 0
        while i < len(units):
            j, w = i, 0
            while j < len(units) and (j == i or w + weight(units[j]) <= bs):
                w += weight(units[j])
                j += 1
            try:
                fn(units[i:j])
            except Exception as exc:  # noqa: BLE001 - only OOM is handled
                if self.batch_size != "auto" or not is_oom(exc):
                    raise
                free_memory()
                if j - i == 1 and (bs == 1 or weight(units[i]) > 1):
                    if fallback is None:
                        raise
                    self.stats["oom_backoffs"] += 1
                    fallback(units[i:j])
                    prog.update(count(units[i]))
                    i = j
                    continue
                bs = max(1, bs // 2)
                self.auto_size = bs
                self.stats["oom_backoffs"] += 1
                log.warning("out of memory at batch size %d; retrying with %d", bs * 2, bs)
                continue
            prog.update(sum(count(u) for u in units[i:j]))
            i = j
        prog.close()
