"""Logging set-up for Snakemake scripts: everything goes to the rule's ``log:`` file."""
from __future__ import annotations

import logging
import sys


def setup_logging(log_path=None, level: int = logging.INFO) -> logging.Logger:
    """Send the root logger (and warnings) to ``log_path`` (or stderr) and return a logger."""
    handlers: list[logging.Handler] = []
    if log_path:
        handlers.append(logging.FileHandler(str(log_path), mode="w", encoding="utf-8"))
    else:
        handlers.append(logging.StreamHandler(sys.stderr))
    logging.basicConfig(
        level=level,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        handlers=handlers,
        force=True,
    )
    logging.captureWarnings(True)
    logger = logging.getLogger("csbench")

    def excepthook(exc_type, exc, tb):
        # the error (file and line of bad input, ...) goes to the rule's log as well as stderr
        logger.error("failed: %s", exc, exc_info=(exc_type, exc, tb))
        sys.__excepthook__(exc_type, exc, tb)

    sys.excepthook = excepthook
    return logger


def snakemake_logger(snakemake) -> logging.Logger:
    """Configure a Snakemake ``script:`` job: logging to its first log file, and the thread
    pools of the process capped at the rule's ``threads`` (:func:`csbench.runtime.limit_threads`).
    """
    from .runtime import limit_threads

    global _IN_SNAKEMAKE_JOB

    limit_threads(getattr(snakemake, "threads", None))
    _IN_SNAKEMAKE_JOB = True
    log = snakemake.log[0] if len(snakemake.log) else None
    return setup_logging(log)


# -- progress of long jobs --------------------------------------------------------------------

_IN_SNAKEMAKE_JOB = False       # set by snakemake_logger: a job logs to its log file, no bar


def _fmt(x: float, unit: str) -> str:
    if unit == "B":
        for scale, name in ((1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")):
            if x >= scale:
                return f"{x / scale:.1f} {name}"
        return f"{x:.0f} B"
    return f"{x:,.0f} {unit}" if float(x).is_integer() else f"{x:,.1f} {unit}"


def _duration(s: float) -> str:
    s = int(round(s))
    if s >= 3600:
        return f"{s // 3600} h {s % 3600 // 60:02d} min"
    if s >= 60:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s} s"


class Progress:
    """Progress of a long loop: ``done/total``, rate and ETA, logged every ``interval`` seconds
    or each ``fraction`` of the total (whichever comes first), plus a final line; a tqdm bar
    instead of the periodic lines when stderr is a terminal and the code is not running in a
    Snakemake job (a script run by hand). ``CSBENCH_PROGRESS_BAR=0|1`` forces the choice.

    >>> with Progress(len(items), "scoring", unit="items") as prog:
    ...     for chunk in chunks:
    ...         work(chunk); prog.update(len(chunk))
    """

    def __init__(self, total: float | None, desc: str, unit: str = "items",
                 logger: logging.Logger | None = None, interval: float = 30.0,
                 fraction: float = 0.10, bar: bool | None = None, clock=None):
        import os
        import time

        self.total = total
        self.desc = desc
        self.unit = unit
        self.log = logger or logging.getLogger("csbench.progress")
        self.interval = interval
        self.fraction = fraction
        self.clock = clock or time.monotonic
        self.done = 0.0
        self.start = self.last_time = self.clock()
        self.last_done = 0.0
        self.closed = False
        if bar is None:
            env = os.environ.get("CSBENCH_PROGRESS_BAR")
            bar = (env == "1") if env in ("0", "1") else (
                not _IN_SNAKEMAKE_JOB and hasattr(sys.stderr, "isatty") and sys.stderr.isatty())
        self.bar = None
        if bar:
            try:
                from tqdm import tqdm

                self.bar = tqdm(total=total, desc=desc, unit=unit, unit_scale=unit == "B",
                                unit_divisor=1024 if unit == "B" else 1000, file=sys.stderr)
            except ImportError:
                self.bar = None

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self.close(ok=exc_type is None)

    def update(self, n: float = 1) -> None:
        """``n`` more units done."""
        self.set(self.done + n)

    def set(self, done: float) -> None:
        """``done`` units done in all."""
        step = done - self.done
        self.done = done
        if self.bar is not None:
            self.bar.update(step)
            return
        now = self.clock()
        due = now - self.last_time >= self.interval
        if self.total and self.fraction:
            step = self.total * self.fraction
            due = due or int(self.done / step + 1e-9) > int(self.last_done / step + 1e-9)
        if due and self.done < (self.total or float("inf")):
            self._log(now)

    def line(self, now: float | None = None) -> str:
        """The progress line: ``desc: done/total unit (pct), rate, elapsed, ETA``."""
        now = self.clock() if now is None else now
        elapsed = max(now - self.start, 1e-9)
        rate = self.done / elapsed
        parts = [f"{self.desc}: {_fmt(self.done, self.unit)}"]
        if self.total:
            parts[0] += f" of {_fmt(self.total, self.unit)} ({100 * self.done / self.total:.0f}%)"
        parts.append(f"{_fmt(rate, self.unit)}/s")
        parts.append(f"elapsed {_duration(elapsed)}")
        if self.total and rate > 0 and self.done < self.total:
            parts.append(f"ETA {_duration((self.total - self.done) / rate)}")
        return ", ".join(parts)

    def _log(self, now: float) -> None:
        self.log.info("%s", self.line(now))
        self.last_time = now
        self.last_done = self.done

    def close(self, ok: bool = True) -> None:
        """Finish: close the bar and log the final line (``done`` or ``stopped``)."""
        if self.closed:
            return
        self.closed = True
        if self.bar is not None:
            self.bar.close()
        if not self.total and not self.done:
            return                              # (nothing to do: no line)
        self.log.info("%s (%s)", self.line(), "done" if ok else "stopped")


def progress(total: float | None, desc: str, unit: str = "items", **kw) -> Progress:
    """Shorthand for :class:`Progress` (see there)."""
    return Progress(total, desc, unit=unit, **kw)
