"""Progress on stderr for long fits: bars for the long loops (chunk fits, PPE blocks) and a
status line naming the step of each release.

Off by default, so library calls print nothing; the command line switches them on with
:func:`progress_bars` when stderr is a terminal, and so can a library user. A bar only counts
iterations whose number is public or fixed by earlier DP outputs (chunks, blocks); the status
line shows the step name and the count of the releases charged so far — the ledger's public
metadata (DESIGN.md rules 5 and 10: the ledger varies between datasets only through DP
outputs) — and appears only once its block has run :data:`STATUS_DELAY` seconds, so short
fits stay silent. Neither shows anything derived from private data.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from tqdm import tqdm

T = TypeVar("T")

#: seconds a ``progress_bars`` block runs before its status line appears
STATUS_DELAY = 2.0
#: least seconds between two redraws of the status line
STATUS_REFRESH = 0.1

_ENABLED: ContextVar[bool] = ContextVar("privgauss_progress", default=False)


class _Status:
    """The status line of one ``progress_bars`` block, opened at its first release."""

    def __init__(self) -> None:
        self.line: tqdm | None = None

    def released(self, step: str) -> None:
        if self.line is None:
            from tqdm import tqdm as _tqdm

            self.line = _tqdm(desc="privacy releases", delay=STATUS_DELAY,
                              mininterval=STATUS_REFRESH, leave=False, file=sys.stderr,
                              bar_format="{desc}: {n} [{elapsed}{postfix}]")
        self.line.set_postfix_str(step, refresh=False)
        self.line.update(1)

    def close(self) -> None:
        if self.line is not None:
            self.line.close()


_STATUS: ContextVar[_Status | None] = ContextVar("privgauss_status", default=None)


@contextmanager
def progress_bars(enabled: bool = True) -> Iterator[None]:
    """Show (or hide) progress on stderr for the fits run inside the ``with`` block: the bars
    of their long loops and a status line naming each release's step (after
    :data:`STATUS_DELAY` seconds)."""
    status = _Status() if enabled else None
    token, status_token = _ENABLED.set(bool(enabled)), _STATUS.set(status)
    try:
        yield
    finally:
        _STATUS.reset(status_token)
        _ENABLED.reset(token)
        if status is not None:
            status.close()


def on_terminal() -> AbstractContextManager[None]:
    """:func:`progress_bars` switched on when stderr is a terminal (the command line and the
    benchmarks' ``__main__``), off when it is redirected to a file or a pipe."""
    return progress_bars(sys.stderr.isatty())


def released(step: str) -> None:
    """Report a release charged under ``step`` (a ledger step name: public metadata) to the
    status line, when one is shown here. Called by the accountant after each charge to a
    top-level ledger; a no-op outside ``progress_bars()`` and in threads a fit starts."""
    status = _STATUS.get()
    if status is not None:
        status.released(step)


def enabled() -> bool:
    """Whether progress bars are switched on here."""
    return _ENABLED.get()


def bar(iterable: Iterable[T], desc: str, *, total: int | None = None, force: bool = False) -> tqdm:
    """``iterable`` wrapped in a progress bar, shown when switched on (or ``force``)."""
    from tqdm import tqdm as _tqdm  # imported on first use: tqdm is slow to import

    return _tqdm(
        iterable,
        desc=desc,
        total=total,
        disable=not (force or enabled()),
        leave=False,
        file=sys.stderr,
    )
