"""The progress of a run on standard error: a rich progress bar on a terminal, plain
lines elsewhere.

On a terminal: bar, done/total, time left, then ``ok 118  err 2  success 85.6%
17.3 ep/s  1,204 tok/s`` (tokens when episodes carry model totals), redrawn a few times
a second by rich's own thread. Off a terminal (CI logs, pipes, files): one plain line
at each tenth of the run, one at least every ``interval`` seconds while episodes are
slow, and a last one at the end; no ANSI codes, no carriage returns.

:meth:`Progress.update` is called once per finished episode from the run's loop, so it
only counts: the bar's drawing happens elsewhere (rich's refresh thread, the heartbeat
thread, or a threshold test).
"""

from __future__ import annotations

import math
import sys
import threading
import time
from typing import Any, TextIO

from rich.console import Console
from rich.progress import BarColumn, ProgressColumn, TimeRemainingColumn
from rich.progress import Progress as RichProgress
from rich.progress import Task as RichTask
from rich.table import Column
from rich.text import Text

from intercode.console import console_for, is_tty

__all__ = ["Progress"]

PUSH_S = 0.1  # how often the bar's own count (its ETA's samples) is brought up to date


class Progress:
    """Counts finished episodes and shows them; ``live`` (default: whether ``stream``
    is a terminal) chooses the bar over plain lines."""

    def __init__(self, total: int, enabled: bool = True, stream: TextIO | None = None,
                 live: bool | None = None, interval: float | None = 30.0) -> None:
        self.total = total
        self.done = self.ok = self.errors = self.skipped = self.success = 0
        self.tokens = 0
        self.with_llm = False
        self.enabled = enabled
        self.stream = stream if stream is not None else sys.stderr
        self.live = is_tty(self.stream) if live is None else live
        self.interval = interval
        self.started = time.monotonic()
        self._lock = threading.Lock()  # one writer of plain lines at a time
        self._last_line = self.started
        self._next_mark = self._mark_after(0)
        self._pushed = 0.0
        self._bar: RichProgress | None = None
        self._task: Any = None
        self._stop = threading.Event()
        self._beat: threading.Thread | None = None
        if not enabled:
            return
        if self.live:
            self._start_bar(console_for(self.stream))
        elif interval:
            self._beat = threading.Thread(target=self._heartbeat, name="progress",
                                          daemon=True)
            self._beat.start()

    # -- counting -----------------------------------------------------------------------

    def update(self, record: dict[str, Any]) -> None:
        """Count one finished episode."""
        self.done += 1
        status = record.get("status")
        if status == "ok":
            self.ok += 1
            if record.get("success"):
                self.success += 1
        elif status == "error":
            self.errors += 1
        elif status == "skipped":
            self.skipped += 1
        llm = record.get("llm")
        if isinstance(llm, dict):
            self.with_llm = True
            self.tokens += (llm.get("prompt_tokens") or 0) + (llm.get("completion_tokens") or 0)
        if not self.enabled:
            return
        if self._bar is not None:
            now = time.monotonic()
            if now - self._pushed >= PUSH_S or self.done >= self.total:
                self._pushed = now
                self._bar.update(self._task, completed=self.done)
        elif self.done >= self._next_mark:
            self._next_mark = self._mark_after(self.done)
            self._write(self.line())

    def _mark_after(self, done: int) -> int:
        """The count at the next tenth of the run after ``done`` (never the end: the
        last line is :meth:`finish`'s)."""
        for tenth in range(1, 10):
            mark = math.ceil(self.total * tenth / 10)
            if mark > done:
                return mark if mark < self.total else sys.maxsize
        return sys.maxsize

    # -- what is shown ------------------------------------------------------------------

    def elapsed(self) -> float:
        """Seconds since the start."""
        return max(1e-9, time.monotonic() - self.started)

    def stats(self) -> str:
        """``ok 118  err 2  success 85.6%  17.3 ep/s`` (and skips, tokens per second)."""
        elapsed = self.elapsed()
        scored = self.ok + self.errors  # an error counts as a failure, as in the summary
        success = f"{100 * self.success / scored:.1f}%" if scored else "n/a"
        parts = [f"ok {self.ok}", f"err {self.errors}"]
        if self.skipped:
            parts.append(f"skipped {self.skipped}")
        parts += [f"success {success}", f"{self.done / elapsed:.1f} ep/s"]
        if self.with_llm:
            parts.append(f"{self.tokens / elapsed:,.0f} tok/s")
        return "  ".join(parts)

    def line(self, final: bool = False) -> str:
        """The current plain line."""
        pct = f"{100 * self.done / self.total:.0f}%" if self.total else "-"
        head = f"progress {self.done}/{self.total} ({pct})"
        elapsed = self.elapsed()
        if final:
            word = "done" if self.done >= self.total else "stopped"
            tail = f"{word} after {_duration(elapsed)}"
        elif self.done:
            tail = f"eta {_duration((self.total - self.done) * elapsed / self.done)}"
        else:
            tail = f"{_duration(elapsed)} so far"
        return f"{head}  {self.stats()}  {tail}"

    def _write(self, line: str) -> None:
        with self._lock:
            self._last_line = time.monotonic()
            try:
                self.stream.write(line + "\n")
                self.stream.flush()
            except (OSError, ValueError):  # a closed pipe must not end the run
                pass

    def _heartbeat(self) -> None:
        assert self.interval
        while not self._stop.wait(min(self.interval, 1.0)):
            if time.monotonic() - self._last_line >= self.interval:
                self._write(self.line())

    def _start_bar(self, console: Console) -> None:
        self._bar = RichProgress(BarColumn(bar_width=24), _StatsColumn(self, counts=True),
                                 TimeRemainingColumn(), _StatsColumn(self),
                                 console=console, transient=False,
                                 refresh_per_second=4, redirect_stdout=False)
        self._task = self._bar.add_task("eval", total=self.total)
        self._bar.start()

    def finish(self) -> None:
        """Show the last state and stop drawing (idempotent)."""
        if not self.enabled:
            return
        self.enabled = False
        self._stop.set()
        if self._beat is not None:
            self._beat.join()
        if self._bar is not None:
            self._bar.update(self._task, completed=self.done)
            self._bar.stop()
        else:
            self._write(self.line(final=True))


class _StatsColumn(ProgressColumn):
    """The counts, read from the :class:`Progress` when rich redraws."""

    def __init__(self, owner: Progress, counts: bool = False) -> None:
        super().__init__(table_column=Column(no_wrap=True))
        self.owner = owner
        self.counts = counts

    def render(self, task: RichTask) -> Text:
        if self.counts:  # the bar's own count lags by up to PUSH_S
            return Text(f"{self.owner.done}/{self.owner.total}", style="green")
        return Text(self.owner.stats())


def _duration(elapsed: float) -> str:
    seconds = round(elapsed)
    if seconds < 60:
        return f"{seconds}s"
    minutes, sec = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m{sec:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"
