"""Child processes that are ended with everything they started.

The embedded broker (:mod:`aiokafka_lite.embedded`) and the Spark standalone cluster
(:mod:`aiokafka_lite.spark.cluster`) run servers as child processes the same way: each
in a process group of its own (a new session; a new process group on Windows), its
output appended to a log file, and stopped by a signal to the whole group, then SIGKILL
for what is left after a grace period, so that nothing it started outlives it.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

__all__ = ["HARD_KILL", "end_group", "log_tail", "signal_group", "spawn"]

#: An immediate, uncatchable stop (None: ``Popen.kill()``, i.e. TerminateProcess).
HARD_KILL: signal.Signals | None = None if sys.platform == "win32" else signal.SIGKILL

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def spawn(
    command: Sequence[str], log: str | Path, env: Mapping[str, str]
) -> subprocess.Popen[bytes]:
    """Start ``command`` leading a process group of its own, its output appended to ``log``.

    O_APPEND: the child's writes always land at the end, and :func:`log_tail` reads through
    a handle of its own, so nothing shares a file offset with the child.
    """
    # A new session on POSIX (its own process group: killpg reaches all of it), a new
    # process group on Windows.
    if sys.platform == "win32":
        flags, new_session = subprocess.CREATE_NEW_PROCESS_GROUP, False
    else:
        flags, new_session = 0, True
    with open(log, "ab") as out:
        return subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=dict(env),
            creationflags=flags,
            start_new_session=new_session,
        )


def signal_group(proc: subprocess.Popen[bytes], sig: signal.Signals | None) -> None:
    """Send ``sig`` to the process group ``proc`` leads (None, or Windows: kill ``proc``).

    The group may outlive its leader (a worker's executors): it is signalled whether the
    leader still runs or not (a group's id is not given to another process while any
    member lives).
    """
    with contextlib.suppress(ProcessLookupError, PermissionError):
        if sys.platform == "win32" or sig is None:
            if proc.poll() is None:
                proc.kill()
        else:
            os.killpg(proc.pid, sig)  # pgid == pid: start_new_session


def end_group(
    proc: subprocess.Popen[bytes], sig: signal.Signals | None, grace: float | None
) -> None:
    """Stop ``proc``'s process group: ``sig``, ``grace`` s to exit (None: as long as it
    takes), then a hard kill of
    whatever is left of the group; returns once ``proc`` is reaped."""
    if proc.poll() is None:
        signal_group(proc, sig)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(grace)
    signal_group(proc, HARD_KILL)
    proc.wait()


def log_tail(path: str | Path, start: int = 0, size: int = 4096) -> str:
    """The last ``size`` bytes of ``path`` from offset ``start`` on, as text without
    terminal colour codes ("" if it cannot be read)."""
    try:
        with open(path, "rb") as log:
            end = log.seek(0, os.SEEK_END)
            begin = max(start, end - size)
            log.seek(begin)
            data = log.read(end - begin)
    except OSError:
        return ""
    return _ANSI.sub("", data.decode("utf-8", "replace")).strip()
