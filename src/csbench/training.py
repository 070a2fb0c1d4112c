"""Pieces every fine-tuning loop in csbench shares (the QADS QA head, :mod:`csbench.qads.finetune`;
causal LMs, :mod:`csbench.finetune`): the learning-rate schedule, seeding and progress lines in
the log (the precision context, :func:`csbench.compute.autocast`, is the device and dtype policy's).

* :func:`linear_schedule`: linear warm-up over the first ``warmup`` fraction of the optimizer
  steps, then linear decay to 0 (the schedule of the BERT/GPT-2 fine-tuning scripts);
* :func:`seeded`: seed PyTorch's global RNG (dropout) and return a CPU generator for the data
  order: one seed decides a run on a CPU;
* :class:`Progress`: a log line at most every ``every`` seconds (examples/s, ETA, last loss).
"""
from __future__ import annotations

import logging
import time

log = logging.getLogger(__name__)


def linear_schedule(optimizer, total_steps: int, warmup: float = 0.0):
    """A ``LambdaLR`` over ``total_steps`` optimizer steps: linear warm-up over the first
    ``warmup`` fraction, then linear decay to 0."""
    import torch

    total = max(1, int(total_steps))
    warm = int(round(warmup * total))

    def factor(step: int) -> float:
        if step < warm:
            return (step + 1) / warm
        return max(0.0, (total - step) / max(1, total - warm))

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)


def seeded(seed: int):
    """Seed PyTorch's global RNG (dropout, fresh heads) with ``seed`` and return a CPU
    ``torch.Generator`` seeded with it, for the data order."""
    import torch

    torch.manual_seed(seed)
    return torch.Generator().manual_seed(seed)


class Progress:
    """Progress of a training loop in the log, at most once every ``every`` seconds."""

    def __init__(self, total: int, what: str = "examples", every: float = 60.0):
        self.total, self.what, self.every = total, what, every
        self.t0 = self.last = time.perf_counter()

    def elapsed(self) -> float:
        return time.perf_counter() - self.t0

    def update(self, done: int, epoch: int, loss: float) -> None:
        now = time.perf_counter()
        if now - self.last < self.every:
            return
        self.last = now
        rate = done / max(now - self.t0, 1e-9)
        log.info("training: epoch %d, %d/%d %s, %.2f %s/s, ETA %.0f s, loss %.4f", epoch, done,
                 self.total, self.what, rate, self.what, (self.total - done) / max(rate, 1e-9),
                 loss)
