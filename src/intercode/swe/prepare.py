"""Build the environments of a SWE task file ahead of a run (``intercode image build --swe``)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from intercode.datasets import load_dataset
from intercode.datasets.swe import SweTask
from intercode.errors import ConfigError, IntercodeError

__all__ = ["Prepared", "prepare"]


@dataclass(frozen=True)
class Prepared:
    """One instance's outcome: built (with what) or not (and why)."""

    instance_id: str
    ok: bool
    detail: str
    seconds: float


def prepare(dataset: str, instances: Sequence[str] = (), backend: str = "bwrap",
            repo_mirror: str | None = None, rebuild: bool = False,
            progress: Callable[[Prepared], None] | None = None) -> list[Prepared]:
    """Build (or find built) the environment of each instance of ``dataset`` (a SWE
    dataset name or file), or of those named in ``instances``."""
    from intercode.swe import build, specs

    ds = load_dataset(dataset, "swe")
    if ds.env != "swe":
        raise ConfigError(f"{dataset} is a dataset of the {ds.env} environment, not swe")
    wanted = set(instances)
    tasks = [t for t in ds if isinstance(t, SweTask) and (not wanted or t.task_id in wanted)]
    missing = wanted - {t.task_id for t in tasks}
    if missing:
        raise ConfigError(f"{dataset} has no instance {', '.join(sorted(missing))}")
    specs.swebench_version()
    layout = build.swe_layout()
    out = []
    for task in tasks:
        started = time.monotonic()
        try:
            built = build.build_env(task, backend, layout, repo_mirror, rebuild=rebuild)
            manifest = built.manifest
            if manifest.get("venv"):
                wanted_py = manifest.get("python_wanted")
                used = manifest.get("python_used")
                py = f"python {used}" + (f" (the spec asks for {wanted_py})"
                                         if wanted_py != used else "")
                detail = f"{len(built.tree.entries)} files, venv with {py}"
                if manifest.get("pre_install_skipped"):
                    detail += "; system commands of the spec not run: " + "; ".join(
                        manifest["pre_install_skipped"])[:200]
            else:
                detail = f"{len(built.tree.entries)} files, no packages needed"
            result = Prepared(task.task_id, True, detail, time.monotonic() - started)
        except IntercodeError as exc:
            result = Prepared(task.task_id, False, str(exc), time.monotonic() - started)
        out.append(result)
        if progress is not None:
            progress(result)
    return out
