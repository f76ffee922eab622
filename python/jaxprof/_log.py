"""The ``jaxprof`` logger: warnings and one-line capture reports that reach the user by default."""
from __future__ import annotations

import logging
import sys


class _FallbackHandler(logging.StreamHandler):
    """Prints to stderr only while the application has configured no logging of its own."""

    def emit(self, record: logging.LogRecord) -> None:
        if not logging.getLogger().handlers:
            super().emit(record)


def _make_logger() -> logging.Logger:
    logger = logging.getLogger("jaxprof")
    if not any(isinstance(h, _FallbackHandler) for h in logger.handlers):
        handler = _FallbackHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("jaxprof: %(message)s"))
        logger.addHandler(handler)
    if logger.level == logging.NOTSET:
        logger.setLevel(logging.INFO)
    return logger


log = _make_logger()
