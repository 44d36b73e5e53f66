"""The CTF dataset: InterCode-CTF's 100 picoCTF tasks and their files.

Tasks that need the internet (a live picoCTF server, a download, ``whois``) and tasks
whose files are missing are marked, so that runs without network skip them with a
reason instead of scoring 0. Golds that upstream got wrong are corrected from
``data/ctf_overrides.json``, with the evidence.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from intercode.datafiles import REVISION, DataFile
from intercode.datasets.nl2bash import read_json
from intercode.datasets.tasks import Dataset, Task
from intercode.errors import DatasetError
from intercode.fetch import fetch_file

__all__ = ["CtfTask", "asset_path", "folder_entries", "load"]

NETWORK: dict[int, str] = {
    **{t: "talks to a live picoCTF server" for t in
       (9, 16, 20, 28, 29, 39, 41, 42, 43, 54, 57, 62, 66, 73, 87, 88, 89, 95)},
    1: "downloads its disk image (dds2-alpine.flag.img.gz)",
    7: "downloads the program it is about",
    35: "downloads the script it is about",
    59: "needs whois",
}


@dataclass(frozen=True)
class CtfAsset:
    """A file of a task, placed in its working directory."""

    path: str
    file: DataFile | None
    executable: bool


@dataclass(frozen=True)
class CtfTask(Task):
    """A capture-the-flag task; ``assets`` are its files (``file`` None: not available).

    Tasks of a user dataset have a folder of files instead (``files_path``, absolute,
    copied into the task's working directory) and may carry a ``solution`` (shell
    commands that print the flag; documentation, never run by the environment).
    """

    task_id: int = 0
    tags: tuple[str, ...] = ()
    url: str = ""
    assets: tuple[CtfAsset, ...] = ()
    needs_network: str | None = None
    gold_note: str | None = None
    upstream_gold: str | None = None
    files_path: str = ""
    solution: str = ""

    @property
    def category(self) -> str | None:
        """The picoCTF category (the first tag: Cryptography, Forensics, ...)."""
        return self.tags[0] if self.tags else None

    @property
    def missing_assets(self) -> list[str]:
        """Files the task needs that no mirror or download has."""
        return [a.path for a in self.assets if a.file is None]


@lru_cache(maxsize=1)
def _manifest() -> dict[str, Any]:
    text = resources.files("intercode.datasets.data").joinpath("ctf_assets.json")
    manifest: dict[str, Any] = json.loads(text.read_text(encoding="utf-8"))
    return manifest


@lru_cache(maxsize=1)
def _overrides() -> dict[int, dict[str, str]]:
    text = resources.files("intercode.datasets.data").joinpath("ctf_overrides.json")
    raw = json.loads(text.read_text(encoding="utf-8"))
    return {int(k): v for k, v in raw.items() if not k.startswith("_")}


def _assets() -> dict[int, list[CtfAsset]]:
    found: dict[int, list[CtfAsset]] = {}
    for item in _manifest()["assets"]:
        tid, rel = int(item["task"]), str(item["path"])
        spec = None
        if item["sha256"]:
            spec = DataFile(f"data/ctf/task_assets/{tid}/{rel}", f"ctf/task_assets/{tid}/{rel}",
                            item["sha256"], int(item["size"]))
        found.setdefault(tid, []).append(CtfAsset(rel, spec, bool(item["exec"])))
    return found


def load(name: str) -> Dataset:
    """``intercode-ctf``: the 100 tasks in upstream order."""
    meta = _manifest()["ic_ctf"]
    path = fetch_file(DataFile(meta["upstream"], meta["mirror"], meta["sha256"], meta["size"]))
    raw = read_json(path, name)
    if not isinstance(raw, list):
        raise DatasetError(f"{path.name}: expected a JSON list of tasks")
    assets, overrides = _assets(), _overrides()
    tasks = []
    for i, item in enumerate(raw):
        if not isinstance(item, dict) or not isinstance(item.get("query"), str) or not isinstance(
                item.get("gold"), str):
            raise DatasetError(f"{path.name}: task {i} needs 'query' and 'gold' strings")
        tid = int(item.get("task_id", i))
        gold, note, upstream = item["gold"], None, None
        fix = overrides.get(tid)
        if fix is not None and fix["upstream_gold"] == gold:
            gold, note, upstream = fix["gold"], fix["evidence"], item["gold"]
        tasks.append(CtfTask(index=i, query=item["query"], gold=gold, dataset=name, source=name,
                             source_index=i, task_id=tid, tags=tuple(item.get("tags", [])),
                             url=str(item.get("source", "")), assets=tuple(assets.get(tid, [])),
                             needs_network=NETWORK.get(tid), gold_note=note,
                             upstream_gold=upstream))
    return Dataset(name, "ctf", tuple(tasks), REVISION, "InterCode-CTF (picoCTF)")


def asset_path(asset: CtfAsset) -> Path:
    """The verified local copy of an asset."""
    if asset.file is None:
        raise DatasetError(f"{asset.path} is not available")
    return fetch_file(asset.file)


MAX_FILES = 10_000  # files and folders of a user task's folder
MAX_ASSET = 64 << 20  # bytes of one of its files
MAX_TOTAL = 256 << 20  # bytes of all of them


def folder_entries(folder: str, root: str) -> list[tuple[str, str, int, bytes | None]]:
    """``(path under root, kind, mode, data)`` of everything in a user task's folder.

    Only directories and regular files are taken; a symbolic link or any other kind of
    file is a :class:`DatasetError` (so that nothing outside the folder is copied in);
    so is a folder of more than :data:`MAX_FILES` entries, a file larger than
    :data:`MAX_ASSET` or more than :data:`MAX_TOTAL` bytes in all. Files are opened
    without following links and without blocking. Modes keep the owner's execute bit
    (0755 or 0644; directories 0755).
    """
    import os

    from intercode import safeio

    base = Path(folder)
    out: list[tuple[str, str, int, bytes | None]] = []
    total = 0

    def walk(directory: Path, rel: str) -> None:
        nonlocal total
        try:
            children = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError as exc:
            raise DatasetError(f"cannot read {directory}: {exc.strerror or exc}") from None
        for child in children:
            sub = f"{rel}/{child.name}" if rel else child.name
            if len(out) >= MAX_FILES:
                raise DatasetError(f"{base} has more than {MAX_FILES} files and folders")
            if child.is_symlink():
                raise DatasetError(f"{base / sub} is a symbolic link (only files and folders "
                                   "are copied)")
            if child.is_dir(follow_symlinks=False):
                out.append((f"{root}/{sub}", "d", 0o755, None))
                walk(Path(child.path), sub)
            elif child.is_file(follow_symlinks=False):
                try:
                    with safeio.open_regular(child.path, MAX_ASSET, follow=False) as fh:
                        executable = bool(os.fstat(fh.fileno()).st_mode & 0o100)
                        data = fh.read(MAX_ASSET + 1)
                except safeio.Refused as exc:
                    raise DatasetError(f"{base / sub} {exc}") from None
                except OSError as exc:
                    raise DatasetError(f"cannot read {child.path}: {exc.strerror or exc}") \
                        from None
                total += len(data)
                if len(data) > MAX_ASSET:
                    raise DatasetError(f"{base / sub} is larger than "
                                       f"{safeio.size_text(MAX_ASSET)}")
                if total > MAX_TOTAL:
                    raise DatasetError(f"the files of {base} are larger than "
                                       f"{safeio.size_text(MAX_TOTAL)} in all")
                out.append((f"{root}/{sub}", "f", 0o755 if executable else 0o644, data))
            else:
                raise DatasetError(f"{base / sub} is neither a file nor a folder")

    if not base.is_dir():
        raise DatasetError(f"{base} is not a folder")
    walk(base, "")
    return out
