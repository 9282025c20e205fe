"""Progress messages for long fits, in scikit-learn's ``verbose`` convention."""

from __future__ import annotations

import sys
import time

__all__ = ["Progress"]


class Progress:
    """A few lines per fit (``verbose >= 1``), or a tqdm bar when tqdm is installed (``verbose >= 2``).

    Messages report the steps done (public) and the elapsed time (running
    time depends on the data: a side channel outside the guarantee, as the
    threat model says), never data or noisy values.

    Parameters
    ----------
    verbose : int
        0: silent; 1: at most ``lines`` lines to stderr; 2 and more: a tqdm
        bar if tqdm is importable, else lines.
    total : int
        Number of steps.
    name : str
        Printed before each line (the estimator's name).
    lines : int, default=5
        Lines printed over the fit at ``verbose=1``.

    Examples
    --------
    >>> from skdp.utils._progress import Progress
    >>> p = Progress(0, total=10, name="fit")
    >>> for _ in range(10):
    ...     p.update()
    >>> p.close()
    """

    def __init__(self, verbose: int, total: int, name: str, lines: int = 5) -> None:
        self.verbose, self.total, self.name = int(verbose or 0), max(int(total), 1), name
        self.done = 0
        self.start = time.perf_counter()
        self._every = max(1, self.total // max(lines, 1))
        self._bar = None
        if self.verbose >= 2:
            try:
                from tqdm.auto import tqdm
            except ImportError:
                tqdm = None
            if tqdm is not None:
                self._bar = tqdm(total=self.total, desc=name, leave=False)

    def update(self, steps: int = 1) -> None:
        """Record ``steps`` more steps done."""
        if self.verbose <= 0:
            return
        before, self.done = self.done, self.done + steps
        if self._bar is not None:
            self._bar.update(steps)
        elif before // self._every != self.done // self._every or self.done == self.total:
            elapsed = time.perf_counter() - self.start
            print(f"[{self.name}] step {self.done}/{self.total}, {elapsed:.1f} s", file=sys.stderr)

    def close(self) -> None:
        """End the bar (no-op for lines)."""
        if self._bar is not None:
            self._bar.close()
