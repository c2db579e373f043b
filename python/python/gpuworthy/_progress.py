"""Progress of long calls (a sweep, a calibration) in a notebook and in a terminal.

The work runs in Rust without the GIL; it calls back here at each step with the steps planned, the steps done and
what it is measuring, and that call is also where Ctrl-C is noticed (a pending ``KeyboardInterrupt`` stops the work
cleanly). tqdm draws the bar where it is installed (``tqdm.auto``: a widget in Jupyter, a text bar in a terminal);
otherwise one line on standard error is rewritten in place, and nothing is drawn when standard error is not a
terminal, so logs and pipes stay clean.
"""

from __future__ import annotations

import sys
import time
from typing import Any, Callable, Optional

Callback = Callable[[int, int, Optional[str]], None]


class _Line:
    """One line on standard error, rewritten at most ten times a second."""

    def __init__(self, title: str) -> None:
        self.title = title
        self.last = 0.0
        self.measuring = ""

    def __call__(self, planned: int, done: int, measuring: Optional[str]) -> None:
        if measuring:
            self.measuring = measuring
        now = time.monotonic()
        if now - self.last < 0.1 and done < planned:
            return
        self.last = now
        share = f"{done}/{planned}" if planned else f"{done}"
        sys.stderr.write(f"\r{self.title}: {share} {self.measuring[:60]:<60}")
        sys.stderr.flush()

    def close(self) -> None:
        sys.stderr.write("\r" + " " * (len(self.title) + 80) + "\r")
        sys.stderr.flush()


class _Tqdm:
    """A tqdm bar (a widget in Jupyter, text in a terminal) following the steps."""

    def __init__(self, tqdm: Any, title: str) -> None:
        self.bar = tqdm(total=0, desc=title, leave=False)

    def __call__(self, planned: int, done: int, measuring: Optional[str]) -> None:
        if self.bar.total != planned:
            self.bar.total = planned
        if done > self.bar.n:
            self.bar.update(done - self.bar.n)
        if measuring:
            self.bar.set_postfix_str(measuring[:60], refresh=False)
        self.bar.refresh()

    def close(self) -> None:
        self.bar.close()


class Progress:
    """A context manager giving the callback for ``progress``: ``True`` (a bar where one can be drawn), ``False``
    (none) or a callable of the caller's ``(planned, done, measuring)``."""

    def __init__(self, progress: Any, title: str) -> None:
        self.display: Any = None
        self.callback: Optional[Callback] = None
        if callable(progress):
            self.callback = progress
        elif progress:
            try:
                from tqdm.auto import tqdm
            except ImportError:
                tqdm = None
            if tqdm is not None:
                self.display = _Tqdm(tqdm, title)
            elif sys.stderr is not None and sys.stderr.isatty():
                self.display = _Line(title)
            self.callback = self.display

    def __enter__(self) -> Optional[Callback]:
        return self.callback

    def __exit__(self, *exc: Any) -> None:
        if self.display is not None:
            self.display.close()
