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

    limit_threads(getattr(snakemake, "threads", None))
    log = snakemake.log[0] if len(snakemake.log) else None
    return setup_logging(log)
