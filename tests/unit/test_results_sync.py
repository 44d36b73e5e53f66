"""results.jsonl: records reach the file at once and the disk from a thread."""

from __future__ import annotations

import errno
import json
import os
import threading
from pathlib import Path
from typing import Any

import pytest

from intercode.runner import syncer
from intercode.runner.logs import ResultsLog


def record(task: int) -> dict[str, Any]:
    return {"task": task, "status": "ok", "reward": 1.0}


def _count_syncs(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The file's size at each sync, from now on."""
    synced: list[int] = []
    real_fsync = os.fsync

    def counting_fsync(fd: int) -> None:
        synced.append(os.fstat(fd).st_size)
        real_fsync(fd)

    monkeypatch.setattr(syncer.os, "fsync", counting_fsync)
    return synced


def _fail_syncs(monkeypatch: pytest.MonkeyPatch) -> threading.Event:
    failed = threading.Event()

    def failing_fsync(fd: int) -> None:
        failed.set()
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(syncer.os, "fsync", failing_fsync)
    return failed


def _wait_for_failure(log: ResultsLog) -> None:
    for _ in range(500):
        if log._syncer is not None and log._syncer._error is not None:
            return
        threading.Event().wait(0.01)
    raise AssertionError("the failed sync was never recorded")


def test_an_append_does_not_wait_for_the_disk(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    entered, release = threading.Event(), threading.Event()
    real_fsync = os.fsync
    here = threading.current_thread()
    waited_here: list[int] = []

    def slow_fsync(fd: int) -> None:
        if threading.current_thread() is here:  # the writer itself would wait for the disk
            waited_here.append(fd)
            return
        entered.set()
        release.wait(10)
        real_fsync(fd)

    monkeypatch.setattr(syncer.os, "fsync", slow_fsync)
    log = ResultsLog(tmp_path / "results.jsonl")
    log.append(record(0))
    assert entered.wait(2), "the record was never synced"
    log.append(record(1))  # while the first fsync is held: the writer goes on
    assert not waited_here
    lines = (tmp_path / "results.jsonl").read_bytes().splitlines()
    assert [json.loads(line)["task"] for line in lines] == [0, 1]
    release.set()
    log.close()


def test_close_syncs_the_last_record(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "results.jsonl"
    synced = _count_syncs(monkeypatch)
    log = ResultsLog(path)
    for task in range(50):
        log.append(record(task))
    log.close()
    assert synced and synced[-1] == path.stat().st_size
    assert len(synced) < 50  # records written together share a sync
    assert len(ResultsLog(path).read()) == 50


def test_a_failed_sync_is_raised_and_the_file_still_closed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    failed = _fail_syncs(monkeypatch)
    log = ResultsLog(tmp_path / "results.jsonl")
    log.append(record(0))
    assert failed.wait(10)
    _wait_for_failure(log)
    with pytest.raises(OSError, match="Input/output error"):
        log.append(record(1))
    with pytest.raises(OSError, match="Input/output error"):
        log.append(record(2))  # every later record, not only the next one
    fh = log._fh
    with pytest.raises(OSError, match="Input/output error"):
        log.close()
    assert fh is not None and fh.closed
    assert log._fh is None


def test_a_failed_sync_names_the_file_and_comes_before_the_next_record(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The record whose append raised is not in the file: the file holds exactly the
    records the run counted."""
    path = tmp_path / "results.jsonl"
    failed = _fail_syncs(monkeypatch)
    log = ResultsLog(path)
    log.append(record(0))
    assert failed.wait(10)
    _wait_for_failure(log)
    with pytest.raises(OSError) as raised:
        log.append(record(1))
    assert raised.value.filename == str(path)
    assert [json.loads(line)["task"] for line in path.read_bytes().splitlines()] == [0]
    with pytest.raises(OSError):
        log.close()


def test_a_sync_thread_that_cannot_start_is_an_os_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_thread(self: threading.Thread) -> None:
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(threading.Thread, "start", no_thread)
    log = ResultsLog(tmp_path / "results.jsonl")
    with pytest.raises(OSError) as raised:
        log.append(record(0))
    assert raised.value.errno == errno.EAGAIN and "can't start new thread" in str(raised.value)
    assert log._fh is None and log._syncer is None
    log.close()  # nothing open: nothing to do


def test_ctrl_c_during_the_last_sync_still_syncs_then_is_raised(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "results.jsonl"
    synced = _count_syncs(monkeypatch)
    log = ResultsLog(path)
    log.append(record(0))
    assert log._syncer is not None
    thread = log._syncer._thread
    real_join = thread.join
    calls: list[int] = []

    def interrupted_join(timeout: float | None = None) -> None:
        calls.append(1)
        if len(calls) == 1:
            raise KeyboardInterrupt
        real_join(timeout)

    monkeypatch.setattr(thread, "join", interrupted_join)
    fh = log._fh
    with pytest.raises(KeyboardInterrupt):
        log.close()
    assert len(calls) >= 2 and not thread.is_alive()
    assert synced and synced[-1] == path.stat().st_size
    assert fh is not None and fh.closed
