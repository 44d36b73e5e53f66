"""A whole evaluation run: tasks -> workers -> results.jsonl -> summary.json."""

from __future__ import annotations

import dataclasses
import datetime as dt
import logging
import math
import subprocess
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from intercode import safeio
from intercode.agents.names import DEFAULT_TURNS, STRATEGIES
from intercode.agents.options import StrategyOptions
from intercode.agents.replay import load_trajectories
from intercode.benchmarks import get
from intercode.datasets import Dataset, load_dataset
from intercode.datasets.known_issues import known_issues
from intercode.envs.bounds import task_index
from intercode.envs.settings import EnvSettings
from intercode.errors import ConfigError
from intercode.llm.config import ModelConfig
from intercode.runner.executors import (
    ExecutorFactory,
    InlineExecutor,
    LocalExecutorFactory,
    refuse_nested_start,
)
from intercode.runner.folder import RunFolder
from intercode.runner.logs import ResultsLog, check_resumable, latest_by_task, save_json
from intercode.runner.messages import FILE_NAME as MESSAGES_FILE
from intercode.runner.messages import MessageTable
from intercode.runner.progress import Progress
from intercode.runner.records import SCHEMA
from intercode.runner.summary import summarize
from intercode.runner.worker import WorkerSpec
from intercode.sandbox import describe_root, preflight, rootfs
from intercode.version import __version__

__all__ = ["RunConfig", "execute", "parse_task_ranges", "run_config"]

log = logging.getLogger(__name__)
RESUME_KEYS = ("env", "dataset", "agent", "trajectories", "max_turns", "upstream_quirks",
               "sql_backend", "network", "model_identity", "strategy", "sql_max_rows",
               "sql_max_result_rows", "sql_metric", "test_timeout", "reward", "answer_check")


@dataclass(frozen=True)
class RunConfig:
    """Everything that defines a run."""

    env: str
    dataset: str
    agent: str
    output: Path
    workers: int = 2
    tasks: tuple[int, ...] | None = None
    max_turns: int | None = None
    trajectories: str | None = None
    settings: EnvSettings = field(default_factory=EnvSettings)
    resume: bool = False
    model: ModelConfig | None = None
    strategy: StrategyOptions = field(default_factory=StrategyOptions)
    # where the episodes run: worker processes here, or e.g. Ray actors
    # (intercode.integrations.raycluster.executor.RayExecutorFactory)
    executor: ExecutorFactory = field(default_factory=LocalExecutorFactory)


def run_config(**fields: Any) -> RunConfig:
    """A :class:`RunConfig` from flat keywords, :class:`EnvSettings` fields among them
    (``limits``, ``upstream_quirks``, ``sql_backend``, ``mysql_url``, ``network``)."""
    names = {f.name for f in dataclasses.fields(EnvSettings)}
    settings = EnvSettings(**{k: fields.pop(k) for k in list(fields) if k in names})
    return RunConfig(settings=settings, **fields)


def parse_task_ranges(text: str, count: int) -> tuple[int, ...]:
    """``"0-9,12"`` -> (0, ..., 9, 12), checked against the dataset size."""
    picked: list[int] = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        lo, sep, hi = part.partition("-")
        try:
            first, last = int(lo), int(hi) if sep else int(lo)
        except ValueError as exc:
            raise ConfigError(f"bad task range {part!r} (use e.g. 0-99,120)") from exc
        if first > last:
            raise ConfigError(f"task range {part!r} runs backwards (write {last}-{first})")
        if first < 0 or last >= count:
            raise ConfigError(f"task range {part!r} is outside 0-{count - 1}")
        picked.extend(range(first, last + 1))
    if not picked:
        raise ConfigError("no tasks selected")
    return tuple(dict.fromkeys(picked))


def git_revision(package: Path | None = None) -> str | None:
    """The git revision of the intercode checkout this package runs from (``package``,
    else this one), or None. Only a clone's ``src/intercode`` (an editable install) is
    asked: an installed package starts no ``git`` (a program's start at every run), and a
    virtual environment inside another project's repository would have given that
    project's revision as intercode's."""
    here = package or Path(__file__).resolve().parent.parent  # the intercode package
    root = here.parent.parent
    if here.parent.name != "src" or not (root / ".git").exists() or not _names_intercode(
            root / "pyproject.toml"):
        return None
    try:
        out = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True,
                             text=True, timeout=5, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def _names_intercode(pyproject: Path) -> bool:
    """Whether ``pyproject`` is intercode's own (its project's name)."""
    import tomllib  # only in a clone

    try:
        with pyproject.open("rb") as fh:
            project = tomllib.load(fh).get("project")
    except (OSError, ValueError):
        return False
    return isinstance(project, dict) and project.get("name") == "intercode"


def execute(cfg: RunConfig, progress: bool = True) -> dict[str, Any]:
    """Run (or resume) an evaluation; return its summary.

    The output folder is locked for the whole run: a second run on it is refused.
    """
    refuse_nested_start()
    if cfg.max_turns is None and cfg.agent in DEFAULT_TURNS:
        # a model that never submits must not play forever (the command line always sets
        # a limit; the Python API may leave it out)
        cfg = dataclasses.replace(cfg, max_turns=DEFAULT_TURNS[cfg.agent])
    dataset = load_dataset(cfg.dataset, cfg.env)
    tasks = _check(cfg, dataset)
    if cfg.agent != "human":
        cfg.executor.prepare(cfg.env)
    bench = get(cfg.env)
    backend = bench.sandbox
    if backend is not None:
        backend = cfg.settings.sandbox  # the benchmark runs in a sandbox: the chosen one
    root: dict[str, Any] | None = None
    if backend is not None and cfg.executor.runs_here:
        preflight(backend)  # no bwrap: one line, and no run folder left behind
        # the root file system, built here once (not by each worker) if missing
        root = describe_root(backend, bench.sandbox_profile, bench.sandbox_packages)
    # (on Ray, each actor checks its own node as it starts, builds its own root and says
    # which it is: the run records it when the first actor has started)
    with RunFolder(cfg.output):
        return _run(cfg, dataset, tasks, progress, root)


def _check(cfg: RunConfig, dataset: Dataset) -> tuple[int, ...]:
    """Refuse a configuration that cannot run, before anything is written."""
    if dataset.env != cfg.env:
        raise ConfigError(f"dataset {cfg.dataset!r} belongs to the {dataset.env} environment")
    if cfg.workers < 1:
        raise ConfigError(f"workers must be at least 1, got {cfg.workers}")
    _check_executor(cfg)
    if cfg.max_turns is not None and cfg.max_turns < 1:
        raise ConfigError(f"the turn limit must be at least 1, got {cfg.max_turns}")
    if cfg.tasks is None:
        tasks = tuple(range(len(dataset)))
    else:  # any integral type (numpy's too), each checked against the dataset
        tasks = tuple(dict.fromkeys(task_index(t, len(dataset)) for t in cfg.tasks))
        if not tasks:
            raise ConfigError("no tasks selected")
    if cfg.settings.sql_backend == "mysql" and cfg.settings.mysql_url:
        from intercode.sql.mysql_backend import parse_url

        parse_url(cfg.settings.mysql_url)  # a malformed URL: a ConfigError now, not per worker
    if cfg.agent in STRATEGIES:
        from intercode.agents.llm import POLICIES
        from intercode.llm.client import ChatClient

        if cfg.model is None:
            raise ConfigError(f"--agent {cfg.agent} needs a model (--model)")
        # no key, no endpoint, an option the strategy refuses: fail now, not in every worker
        POLICIES[cfg.agent](cfg.env, ChatClient(cfg.model), cfg.strategy)
    if cfg.agent == "replay":
        tasks = replay_tasks(cfg.trajectories, tasks, cfg.tasks is not None, len(dataset))
    return tasks


def _check_executor(cfg: RunConfig) -> None:
    if not isinstance(cfg.executor, ExecutorFactory):
        raise ConfigError(f"executor must be an ExecutorFactory (intercode.runner.executors: "
                          f"LocalExecutorFactory(), or e.g. intercode.integrations.raycluster."
                          f"executor.RayExecutorFactory()), got {cfg.executor!r}")
    cfg.executor.check(cfg.agent, cfg.settings)


def replay_tasks(path: str | None, tasks: tuple[int, ...], chosen: bool,
                 count: int) -> tuple[int, ...]:
    """The tasks a replay runs, checked once, up front: without ``--tasks`` exactly the
    recorded ones; with it, a chosen task that has no recording is refused. A missing,
    malformed or empty file, or recordings of tasks the dataset does not have, is one
    error, not one per task."""
    if not path:
        raise ConfigError("--agent replay needs --trajectories FILE")
    episodes = load_trajectories(path)
    if not episodes:
        raise ConfigError(f"--trajectories {path} holds no recorded episode")
    outside = sorted(t for t in episodes if not 0 <= t < count)
    if outside:
        raise ConfigError(f"--trajectories {path} has episodes of tasks the dataset does not "
                          f"have (it has 0-{count - 1}): {_few(outside)}; is it the right "
                          "--dataset?")
    if not chosen:
        return tuple(t for t in tasks if t in episodes)
    missing = [t for t in tasks if t not in episodes]
    if missing:
        raise ConfigError(f"--trajectories {path} has no episode of task(s) {_few(missing)}; "
                          "leave out --tasks to replay exactly the recorded tasks")
    return tasks


def _few(items: list[int], shown: int = 10) -> str:
    text = ", ".join(str(i) for i in items[:shown])
    return text + (f" and {len(items) - shown} more" if len(items) > shown else "")


def _run(cfg: RunConfig, dataset: Dataset, tasks: tuple[int, ...],
         progress: bool, root: dict[str, Any] | None = None) -> dict[str, Any]:
    out = cfg.output
    results = ResultsLog(out / "results.jsonl")
    messages = MessageTable(out / MESSAGES_FILE)
    config = _config_record(cfg, dataset.revision, tasks)
    config["rootfs"] = root
    old_root = _recorded_root(out / "config.json")
    previous = _previous(cfg, results, config, len(dataset))
    messages.open_existing()
    save_json(out / "config.json", config)
    todo = [t for t in tasks if previous.get(t, {}).get("status") not in ("ok", "skipped")]
    known = known_issues(cfg.dataset, cfg.env)
    spec = WorkerSpec(env=cfg.env, dataset=cfg.dataset, agent=cfg.agent,
                      settings=cfg.settings, trajectories=cfg.trajectories,
                      max_turns=cfg.max_turns, model=cfg.model, strategy=cfg.strategy,
                      known_issues={t: known[t].reason for t in tasks if t in known})
    human = cfg.agent == "human"  # a person plays at this terminal: no bar drawn over it
    bar = Progress(len(todo), enabled=progress and bool(todo), live=False if human else None,
                   interval=None if human else 30.0)

    def on_record(record: dict[str, Any]) -> None:
        results.append(messages.absorb(record))  # its messages are on disk before it
        previous[int(record["task"])] = record
        bar.update(record)

    def on_root(node_root: dict[str, Any] | None) -> None:
        # the nodes' root: a resumed run keeps its own; config.json records it
        if previous and old_root is not None and node_root is not None:
            _refuse_other_root(old_root, node_root)
        config["rootfs"] = node_root
        save_json(out / "config.json", config)

    failed = False
    try:
        if cfg.agent == "human":  # a person at this terminal: one episode at a time, here
            InlineExecutor(spec).run(todo, on_record)
        else:
            cfg.executor(spec, cfg.workers, on_root).run(todo, on_record)
    except BaseException:
        failed = True
        raise
    finally:
        # each step whatever the others do (a results file that cannot be synced still
        # leaves the messages closed and the summary of the records it holds); the first
        # failure is raised, or, when the run itself failed (its error is raised), said
        closing = _each(results.close, messages.close, bar.finish)
        selected = {t: previous[t] for t in tasks if t in previous}
        summary = summarize(selected, len(tasks), {t for t in tasks if t in known})
        save_json(out / "summary.json", summary)
        if closing is not None:
            if not failed:
                raise closing
            log.warning("while the run stopped: %s", str(closing) or type(closing).__name__)
    return summary


def _each(*steps: Callable[[], None]) -> BaseException | None:
    """Run every step; the first exception any raised (``None``: none)."""
    first: BaseException | None = None
    for step in steps:
        try:
            step()
        except BaseException as exc:  # raised by the caller, once
            if first is None:
                first = exc
    return first


def _previous(cfg: RunConfig, results: ResultsLog, config: dict[str, Any],
              count: int) -> dict[int, dict[str, Any]]:
    """The records a resumed run keeps (none for a new run); lines that are not this
    run's records are left in the file, ignored, and reported once. A results path
    that is not a regular file (a FIFO, a device) is refused."""
    results.check()
    if not (results.path.exists() and results.path.stat().st_size > 0):
        return {}
    if not cfg.resume:
        raise ConfigError(f"{results.path} exists; pass --resume to finish that run, or "
                          "choose another --output")
    check_resumable(cfg.output / "config.json", config, RESUME_KEYS,
                    {"reward": "paper", "answer_check": "tfidf"})
    _check_same_root(cfg.output / "config.json", config.get("rootfs"))
    cut = results.repair()
    if cut:
        log.warning("removed a torn last line (%d bytes) from %s", cut, results.path)
    try:
        records = results.read(max_size=safeio.UNBOUNDED)  # the run's own: any size
    except safeio.Refused as exc:
        raise ConfigError(f"cannot resume: {results.path} {exc}") from None
    kept = [r for r in records if _ours(r, cfg, count)]
    ignored = len(results.skipped) + len(records) - len(kept)
    if ignored:
        log.warning("ignored %d line(s) of %s that are not records of this run; they stay "
                    "in the file", ignored, results.path)
    return latest_by_task(kept)


def _recorded_root(config_path: Path) -> dict[str, Any] | None:
    """The root an existing run recorded (a run from before roots were recorded ran on
    the host's); None: no run there, no sandbox, or unreadable."""
    try:
        old = safeio.loads(safeio.read_bytes(config_path))
    except (OSError, ValueError, safeio.Refused):
        return None  # check_resumable refuses an unreadable one
    before = old.get("rootfs", {"kind": "host", "path": "/"}) if isinstance(old, dict) else None
    return before if isinstance(before, dict) else None


def _check_same_root(config_path: Path, root: dict[str, Any] | None) -> None:
    """A resumed run keeps its root file system; episodes on two roots are not one run."""
    if root is None:  # no sandbox, or nodes that build their own (checked when reported)
        return
    before = _recorded_root(config_path)
    if before is not None:
        _refuse_other_root(before, root)


def _refuse_other_root(before: dict[str, Any], root: dict[str, Any]) -> None:
    if not rootfs.same_root(before, root):
        if before.get("kind") == "image":
            hint = f"--image {before.get('name')} (if it is still that image)"
        elif before.get("kind") == "host":
            hint = "--rootfs host"
        else:
            hint = f"--rootfs {before.get('path')} (if it is still there)"
        raise ConfigError(f"cannot resume: the run used {rootfs.root_label(before)}, now "
                          f"{rootfs.root_label(root)}; resume with {hint}, or use a new --output")


def _ours(rec: dict[str, Any], cfg: RunConfig, count: int) -> bool:
    """Whether a record belongs to this run (same env, dataset and agent, a task of the
    dataset, a known status, and for ``ok`` a numeric reward and a boolean success)."""
    if (rec.get("env"), rec.get("dataset"), rec.get("agent")) != (cfg.env, cfg.dataset,
                                                                   cfg.agent):
        return False
    if not 0 <= rec["task"] < count or rec["status"] not in ("ok", "error", "skipped"):
        return False
    if rec["status"] != "ok":
        return True
    reward = rec.get("reward")
    return (isinstance(reward, int | float) and not isinstance(reward, bool)
            and math.isfinite(reward) and isinstance(rec.get("success"), bool))


def _config_record(cfg: RunConfig, revision: str, tasks: tuple[int, ...]) -> dict[str, Any]:
    data = asdict(cfg)
    data.update(data.pop("settings"))  # config.json keeps its flat layout
    data["executor"] = cfg.executor.name
    data.update(cfg.executor.recorded())
    data["output"] = str(cfg.output)
    data["tasks"] = list(tasks)
    data["dataset_revision"] = revision
    data["intercode_version"] = __version__
    data["git_revision"] = git_revision()
    data["python"] = sys.version.split()[0]
    data["schema"] = SCHEMA
    data["created_at"] = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    data.pop("resume")
    if not cfg.strategy.show_reward:  # runs from before it existed stay resumable
        data["strategy"].pop("show_reward")
    data["mysql_url"] = redact_url(cfg.settings.mysql_url)
    data["model_identity"] = None
    if cfg.model is not None:
        data["model"] = {**asdict(cfg.model), "base_url": redact_url(cfg.model.base_url)}
        data["model_identity"] = cfg.model.identity()
    return data


def redact_url(url: str | None) -> str | None:
    """A server URL without its password."""
    if not url:
        return url
    from urllib.parse import urlsplit, urlunsplit

    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 -- a ValueError when the port is not a number
    except ValueError:
        return "<an unparsable URL>"
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return urlunsplit(parts._replace(netloc=netloc))
