"""An append-only ledger file, locked across processes, that copies of one accountant share.

A :class:`~skdp.accounting.BudgetAccountant` that is pickled (for a worker
process) keeps its charges here: a private temporary directory (mode 0700)
holding ``ledger``, one JSON line per charge after a header line with a
random token, and ``lock``, held with an exclusive OS file lock while a
process reads the ledger and appends to it. Every charge is checked against
the whole file under the lock, so processes cannot overspend concurrently.
The lock is released by the operating system when a process dies.

Only processes that see the same file system path can share a ledger: worker
processes on one machine (joblib/loky, multiprocessing, a local Dask
cluster). A process on another machine finds no ledger and refuses charges.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
import tempfile
from collections.abc import Iterator

if os.name == "nt":  # pragma: no cover - not exercised on the Linux CI
    import msvcrt

    def _lock(f) -> None:
        f.seek(0)
        while True:
            try:
                msvcrt.locking(f.fileno(), msvcrt.LK_LOCK, 1)
                return
            except OSError:  # LK_LOCK gives up after ~10 s; keep waiting
                continue

    def _unlock(f) -> None:
        f.seek(0)
        msvcrt.locking(f.fileno(), msvcrt.LK_UNLCK, 1)
else:
    import fcntl

    def _lock(f) -> None:
        fcntl.flock(f.fileno(), fcntl.LOCK_EX)

    def _unlock(f) -> None:
        fcntl.flock(f.fileno(), fcntl.LOCK_UN)

__all__ = ["LedgerChanged", "LedgerUnreachable", "SharedLedger"]


class LedgerUnreachable(RuntimeError):
    """The ledger file of a shared accountant cannot be read from this process."""


class LedgerChanged(LedgerUnreachable):
    """The ledger file no longer holds what this process has read from it."""


class SharedLedger:
    """Handle on a ledger directory: lock it, read new entries, append entries.

    Parameters
    ----------
    path : str
        The directory.
    token : str
        Random identifier written in the header; a directory with another
        token (a reused path) is not this ledger.
    known : tuple of (int, bytes), optional
        ``(offset, digest)`` of what the handle this one was copied from had
        read (:meth:`known`): the first read checks that the file still
        begins with those bytes, so that a copy unpickled in a new process
        cannot accept a ledger rolled back behind the original's back.
    """

    def __init__(self, path: str, token: str, known: tuple[int, bytes] | None = None) -> None:
        self.path, self.token = path, token
        self.offset = 0  # bytes of the ledger file already read by this handle
        self._read_hash = hashlib.sha256()  # of those bytes, to find them changed later
        self._known = known

    def known(self) -> tuple[int, bytes]:
        """``(offset, SHA-256 digest)`` of the bytes this handle has read."""
        return self.offset, self._read_hash.digest()

    @classmethod
    def create(cls, header: dict) -> SharedLedger:
        """Make a new private directory with a ledger file that holds ``header``."""
        token = secrets.token_hex(16)
        path = tempfile.mkdtemp(prefix="skdp-ledger-")
        with open(os.path.join(path, "lock"), "w"):
            pass
        with open(os.path.join(path, "ledger"), "w", encoding="utf-8") as f:
            f.write(json.dumps({"skdp_ledger": 1, "token": token, **header}) + "\n")
        return cls(path, token)

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the exclusive inter-process lock."""
        try:
            f = open(os.path.join(self.path, "lock"), "r+")
        except OSError as exc:
            raise LedgerUnreachable(str(exc)) from None
        with f:
            _lock(f)
            try:
                yield
            finally:
                _unlock(f)

    def read_new(self) -> list[dict]:
        """Entries appended since the last call (the header is checked, not returned).

        The whole file is read each time: the header is checked, and the bytes
        this handle has read already must be unchanged (same length and
        SHA-256). A ledger truncated, replaced or edited behind the processes'
        backs (a cleanup job, a sync tool restoring an older copy) would
        otherwise hide earlier charges from them, and each could spend the
        budget again. Either way the charge fails closed (LedgerUnreachable).
        What no handle has read yet is not covered: an entry changed between
        its append and the next read by any process.
        """
        try:
            with open(os.path.join(self.path, "ledger"), "rb") as f:
                data = f.read()
        except OSError as exc:
            raise LedgerUnreachable(str(exc)) from None
        header = data[:data.find(b"\n") + 1]
        try:
            token = json.loads(header).get("token") if header else None
        except ValueError:
            token = None
        if token != self.token:
            raise LedgerChanged(f"{self.path} holds another ledger")
        offset, digest = self._known if self.offset == 0 and self._known else self.known()
        if len(data) < offset or hashlib.sha256(data[:offset]).digest() != digest:
            raise LedgerChanged(f"{self.path}: the ledger file no longer holds what this "
                                "process (or the one it was copied from) has read "
                                "(truncated, replaced or edited); its charges may be lost, "
                                "so no charge is accepted.")
        new = data[self.offset:]
        new = new[:new.rfind(b"\n") + 1]  # complete lines only
        try:
            entries = [json.loads(line) for line in new.splitlines()]
        except ValueError:
            raise LedgerChanged(f"{self.path}: the ledger file holds a line that is not an "
                                "entry; no charge is accepted.") from None
        if self.offset == 0:
            entries = entries[1:]
        self.offset += len(new)
        self._read_hash.update(new)
        return entries

    def append(self, entry: dict) -> None:
        """Append one entry (call under :meth:`locked`, after :meth:`read_new`).

        Bytes after the last complete line, found under the lock, are the
        start of a line whose writer died while appending (its charge never
        returned, so no noise was drawn on it): they are cut before the entry
        is written, so that every process can parse the file.
        """
        line = (json.dumps(entry) + "\n").encode("utf-8")
        try:
            with open(os.path.join(self.path, "ledger"), "r+b") as f:
                end = f.seek(0, os.SEEK_END)
                if end != self.offset:
                    f.seek(self.offset)
                    if end < self.offset or b"\n" in f.read():
                        raise LedgerChanged(f"{self.path}: the ledger file changed while "
                                            "locked; no charge is accepted.")
                    f.truncate(self.offset)
                    f.seek(self.offset)
                f.write(line)
        except OSError as exc:
            raise LedgerUnreachable(str(exc)) from None
        self.offset += len(line)
        self._read_hash.update(line)
