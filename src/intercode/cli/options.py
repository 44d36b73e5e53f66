"""The options every environment command shares (eval, validate, play, serve): the
environment, its dataset and settings, and the refusal of those that do not apply."""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from intercode.benchmarks import benchmarks, get, known, names
from intercode.cli.argtypes import integer, sandbox_backend, seconds
from intercode.errors import ConfigError
from intercode.rewards.spider import METRICS

if TYPE_CHECKING:
    from intercode.envs.settings import EnvSettings
    from intercode.sandbox.limits import Limits

__all__ = ["MAX_WORKERS", "add_env_options", "chosen_env", "dataset", "limits",
           "refuse_inapplicable", "settings"]

MAX_WORKERS = 1024


def limits(args: argparse.Namespace) -> Limits:
    """The sandbox limits the options ask for."""
    from intercode.sandbox.limits import Limits

    return Limits(timeout=args.timeout)


def dataset(args: argparse.Namespace) -> str:
    """``--dataset``, else the environment's default dataset."""
    return str(args.dataset or get(args.env).default_dataset)


def settings(args: argparse.Namespace) -> EnvSettings:
    """The environment's settings the options ask for (``--image`` is passed on to the
    workers in the environment)."""
    from intercode.envs.settings import EnvSettings

    swe_image = None
    if args.image is not None and args.env == "swe":
        swe_image = args.image  # a pattern per instance, on either backend
    elif args.image is not None:
        if args.sandbox != "docker":
            raise ConfigError("--image needs --sandbox docker")
        os.environ["INTERCODE_DOCKER_IMAGE"] = args.image  # the workers inherit it

    return EnvSettings(limits=limits(args),
                       upstream_quirks=getattr(args, "upstream_quirks", False),
                       sql_backend=args.backend, mysql_url=args.mysql_url, network=args.network,
                       sql_max_rows=args.sql_max_rows,
                       sql_max_result_rows=args.sql_max_result_rows,
                       sql_metric=args.sql_metric, test_timeout=args.test_timeout,
                       gold_cache=not args.no_gold_cache, sandbox=args.sandbox,
                       repo_mirror=args.repo_mirror, image=swe_image, reward=args.reward,
                       answer_check=args.answer_check or "tfidf")


class EnvNames(Sequence[str]):
    """The environment names, looked up when argparse first checks or shows them: the
    plugin scan costs start-up time that `intercode --help` need not pay."""

    def __getitem__(self, index: Any) -> Any:
        return names()[index]

    def __len__(self) -> int:
        return len(names())

    def __contains__(self, value: object) -> bool:
        return isinstance(value, str) and known(value)


def chosen_env(args: argparse.Namespace) -> str:
    """The environment of a command that takes ``ENV`` or ``--env ENV`` (one of them, or
    both naming the same); it is also left in ``args.env``."""
    given = {e for e in (args.env, getattr(args, "env_option", None)) if e is not None}
    if not given:
        raise ConfigError("name the environment: an ENV argument or --env ENV (e.g. bash)")
    if len(given) > 1:
        raise ConfigError(f"two environments: {args.env} and --env {args.env_option}")
    args.env = given.pop()
    return str(args.env)


def add_env_options(p: argparse.ArgumentParser, env_option: bool = False) -> None:
    """The environment (an argument, or ``--env`` when ``env_option``) and its options."""
    envs = EnvNames()
    what = "environment: %(choices)s (the built-in ones and every installed plugin)"
    if env_option:  # `serve`: ENV or --env ENV (resolved by :func:`chosen_env`)
        p.add_argument("env", nargs="?", default=None, choices=envs, metavar="ENV", help=what)
        p.add_argument("--env", dest="env_option", default=None, choices=envs, metavar="ENV",
                       help="the same as the ENV argument")
    else:
        p.add_argument("env", nargs="?", default="bash", choices=envs, metavar="ENV",
                       help=what)
    p.add_argument("--dataset", default=None,
                   help="a dataset name (see `intercode datasets`) or a JSON Lines file of "
                        "your own tasks (docs/datasets.md); default: the environment's")
    p.add_argument("--timeout", type=seconds(), default=10.0,
                   help="seconds per action (10; at most a day)")
    p.add_argument("--backend", default=None, choices=["sqlite", "mysql"],
                   help="sql: SQL backend (sqlite)")
    p.add_argument("--mysql-url", default=None,
                   help="sql: MySQL/MariaDB server for --backend mysql: mysql://user:pw@host:port")
    p.add_argument("--sql-max-rows", type=integer(1), default=None,
                   help="sql: result rows shown in an observation (1000)")
    p.add_argument("--sql-max-result-rows", type=integer(1), default=None,
                   help="sql: result rows kept for the reward (200000)")
    p.add_argument("--sql-metric", default=None, choices=list(METRICS),
                   help="sql: the Spider metric reported as exec_match: exec_match (the "
                        "official evaluator with --keep_distinct, default) or "
                        "exec_match_nodistinct (its default: DISTINCT deleted)")
    p.add_argument("--test-timeout", type=seconds(), default=None,
                   help="python: seconds per test statement when scoring (5); swe: seconds the "
                        "test command may run when scoring (900)")
    p.add_argument("--reward", default="paper", choices=["paper", "success", "baseline"],
                   help="the reward episodes earn: paper (the benchmark's own, InterCode's), "
                        "success (1 when solved, else 0), or baseline (the paper's less "
                        "what doing nothing earns on the task, rescaled so that solving is 1 "
                        "and doing nothing 0; docs/training.md) (paper)")
    p.add_argument("--answer-check", default=None, choices=["tfidf", "strict"],
                   help="bash: how the answer part is scored: tfidf (InterCode's similarity) or "
                        "strict (the outputs equal as text, order and case counting, after "
                        "normalising line ends and trailing blanks) (tfidf)")
    p.add_argument("--repo-mirror", default=None, metavar="DIR",
                   help="swe: a folder of local git clones (owner__name[.git]) to build "
                        "/testbed from, instead of cloning from GitHub (offline use)")
    p.add_argument("--network", action="store_true",
                   help="ctf: give the sandbox an isolated network (bwrap: slirp4netns; docker: "
                        "the bridge network intercode-isolated), so the tasks that need it run; "
                        "it cannot reach the host's loopback services")
    p.add_argument("--no-gold-cache", action="store_true",
                   help="bash, python: run the gold every episode instead of reusing its "
                        "result stored by an earlier run (see docs/environments/bash.md "
                        "and python.md: the gold cache)")
    p.add_argument("--sandbox", default="bwrap", type=sandbox_backend,
                   help="sandbox backend: bwrap (bubblewrap, default), docker (a Docker "
                        "engine; see docs/docker.md), or one a plugin registers")
    p.add_argument("--image", default=None, metavar="NAME",
                   help="docker: the image the sandboxes run (default: $INTERCODE_DOCKER_IMAGE, "
                        "else the one `intercode image build` makes); swe: a prebuilt image "
                        "per instance on either backend, e.g. "
                        "'swebench/sweb.eval.x86_64.{instance_id}'")
    p.add_argument("--host-network", action="store_true",
                   help="ctf: share the host's network instead (host loopback services, e.g. "
                        "a local MariaDB, become reachable)")
    p.add_argument("--rootfs", default=None, metavar="pinned|host|DIR",
                   help="the sandbox's /usr and /etc: pinned (default: a minimal Debian "
                        "root built once from the package lists, see docs/images.md), host "
                        "(the host's tools), or a prepared root directory "
                        "(also: $INTERCODE_ROOTFS)")


def refuse_inapplicable(args: argparse.Namespace) -> None:
    """Refuse environment options that do nothing for the chosen environment (a silently
    ignored option is a run the user did not ask for)."""
    options = get(args.env).options
    for flag, option, given in (("--backend", "sql_backend", args.backend is not None),
                                ("--mysql-url", "mysql_url", args.mysql_url is not None),
                                ("--network", "network", args.network or args.host_network),
                                ("--sql-max-rows", "sql_max_rows", args.sql_max_rows is not None),
                                ("--sql-max-result-rows", "sql_max_result_rows",
                                 args.sql_max_result_rows is not None),
                                ("--sql-metric", "sql_metric", args.sql_metric is not None),
                                ("--test-timeout", "test_timeout", args.test_timeout is not None),
                                ("--no-gold-cache", "gold_cache", args.no_gold_cache),
                                ("--repo-mirror", "repo_mirror", args.repo_mirror is not None),
                                ("--answer-check", "answer_check",
                                 args.answer_check is not None)):
        if given and option not in options:
            takers = [b.name for b in benchmarks() if option in b.options]
            raise ConfigError(f"{flag} applies only to the {' and '.join(takers) or 'no'} "
                              f"environment, not {args.env}")
    if args.mysql_url is not None and args.backend != "mysql":
        raise ConfigError("--mysql-url needs --backend mysql")
