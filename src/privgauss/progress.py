"""Progress bars for the long loops of a fit (chunk fits, PPE blocks, KSSU levels).

Off by default, so library calls print nothing; the command line switches them on with
:func:`progress_bars`. A bar only counts iterations whose number is public or fixed by earlier
DP outputs (chunks, blocks, tree levels): it shows nothing derived from private data.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from tqdm import tqdm

T = TypeVar("T")

_ENABLED: ContextVar[bool] = ContextVar("privgauss_progress", default=False)


@contextmanager
def progress_bars(enabled: bool = True) -> Iterator[None]:
    """Show (or hide) progress bars on stderr for the fits run inside the ``with`` block."""
    token = _ENABLED.set(bool(enabled))
    try:
        yield
    finally:
        _ENABLED.reset(token)


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
