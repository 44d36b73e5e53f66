"""The ``intercode`` command line (the only place that configures logging)."""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

# only what building the parser needs: each command imports its own dependencies (the
# environments bring Gymnasium and numpy; `intercode --help` must not pay for them)
from intercode.agents.names import AGENTS, DEFAULT_TURNS, STRATEGIES
from intercode.benchmarks import benchmarks, get, names
from intercode.cli_types import Parser, integer, number, sandbox_backend, seconds
from intercode.errors import ConfigError, IntercodeError
from intercode.llm.client import REASONING_EFFORTS, parse_extra_body
from intercode.rewards.spider import METRICS

if TYPE_CHECKING:
    from intercode.agents.llm import StrategyOptions
    from intercode.envs.settings import EnvSettings
    from intercode.llm.client import ModelConfig
    from intercode.sandbox.limits import Limits

# turn limits when --turns is not given (upstream's scripts: 10 turns)
MAX_WORKERS = 1024


def _limits(args: argparse.Namespace) -> Limits:
    from intercode.sandbox.limits import Limits

    return Limits(timeout=args.timeout)


def _dataset(args: argparse.Namespace) -> str:
    return str(args.dataset or get(args.env).default_dataset)


def _settings(args: argparse.Namespace) -> EnvSettings:
    from intercode.envs.settings import EnvSettings

    if args.image is not None:
        if args.sandbox != "docker":
            raise ConfigError("--image needs --sandbox docker")
        os.environ["INTERCODE_DOCKER_IMAGE"] = args.image  # the workers inherit it

    return EnvSettings(limits=_limits(args),
                       upstream_quirks=getattr(args, "upstream_quirks", False),
                       sql_backend=args.backend, mysql_url=args.mysql_url, network=args.network,
                       sql_max_rows=args.sql_max_rows,
                       sql_max_result_rows=args.sql_max_result_rows,
                       sql_metric=args.sql_metric, test_timeout=args.test_timeout,
                       gold_cache=not args.no_gold_cache, sandbox=args.sandbox)


class _EnvNames(Sequence[str]):
    """The environment names, looked up when argparse first checks or shows them: the
    plugin scan costs start-up time that `intercode --help` need not pay."""

    def __getitem__(self, index: Any) -> Any:
        return names()[index]

    def __len__(self) -> int:
        return len(names())

    def __contains__(self, value: object) -> bool:
        return value in names()


def _add_common(p: argparse.ArgumentParser, env_option: bool = False) -> None:
    envs = _EnvNames()
    what = "environment: %(choices)s (the built-in ones and every installed plugin)"
    if env_option:  # `serve`: --env ENV
        p.add_argument("--env", required=True, choices=envs, metavar="ENV", help=what)
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
                   help="python: seconds per test statement when scoring (5)")
    p.add_argument("--network", action="store_true",
                   help="ctf: give the sandbox an isolated network (bwrap: slirp4netns; docker: "
                        "the bridge network intercode-isolated), so the tasks that need it run; "
                        "it cannot reach the host's loopback services")
    p.add_argument("--no-gold-cache", action="store_true",
                   help="bash: run the gold every episode instead of reusing its result "
                        "stored by an earlier run (see README: the gold cache)")
    p.add_argument("--sandbox", default="bwrap", type=sandbox_backend,
                   help="sandbox backend: bwrap (bubblewrap, default), docker (a Docker "
                        "engine; see docs/docker.md), or one a plugin registers")
    p.add_argument("--image", default=None, metavar="NAME",
                   help="docker: the image the sandboxes run (default: $INTERCODE_DOCKER_IMAGE, "
                        "else the one `intercode image build` makes)")
    p.add_argument("--host-network", action="store_true",
                   help="ctf: share the host's network instead (host loopback services, e.g. "
                        "a local MariaDB, become reachable)")
    p.add_argument("--rootfs", default=None, metavar="pinned|host|DIR",
                   help="the sandbox's /usr and /etc: pinned (default: a minimal Debian "
                        "root built once from the package lists, see docs/images.md), host "
                        "(the host's tools), or a prepared root directory "
                        "(also: $INTERCODE_ROOTFS)")


MODEL_DEFAULTS = {"api_key_env": "OPENAI_API_KEY", "temperature": 0.0, "max_tokens": 512,
                  "llm_timeout": 60.0, "llm_retries": 6, "refine_turns": 3}
MODEL_OPTIONS = ("model", "base_url", "top_p", "observation_chars", "observation_rows",
                 "dialogue_limit", "reasoning_effort", "stream", "extra_body", "show_reward")


def _add_model(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("model (LLM agents)")
    g.add_argument("--model", default=None, help="model name, e.g. gpt-4o-mini")
    g.add_argument("--base-url", default=None,
                   help="an OpenAI-compatible endpoint, e.g. http://localhost:8000/v1 "
                        "(default: $OPENAI_BASE_URL or OpenAI)")
    g.add_argument("--api-key-env", default=None,
                   help="environment variable holding the key (OPENAI_API_KEY)")
    g.add_argument("--temperature", type=number(0, 2), default=None, help="0 to 2 (0)")
    g.add_argument("--max-tokens", type=integer(1), default=None, help="(512)")
    g.add_argument("--top-p", type=number(0, 1, low_open=True), default=None)
    g.add_argument("--llm-timeout", type=seconds(), default=None, help="seconds per call (60)")
    g.add_argument("--llm-retries", type=integer(0, 100), default=None,
                   help="retries of a failed call, with exponential backoff (6)")
    g.add_argument("--observation-chars", type=integer(1), default=None,
                   help="cut observations shown to the model (upstream: 1000; ReAct 350)")
    g.add_argument("--observation-rows", type=integer(1), default=None,
                   help="cut SQL results shown to the model (upstream: 50; ReAct 25)")
    g.add_argument("--dialogue-limit", type=integer(1), default=None,
                   help="Try Again: messages kept after the query (upstream: bash 7, sql 5)")
    g.add_argument("--refine-turns", type=integer(0), default=None,
                   help="Plan & Solve repairs (3)")
    g.add_argument("--reasoning-effort", default=None, choices=list(REASONING_EFFORTS),
                   help="reasoning models: how hard to think (sent as reasoning_effort)")
    g.add_argument("--stream", action="store_true", default=None,
                   help="stream replies (server-sent events), so that a long generation is "
                        "not cut by the time-out; a stream silent for --llm-timeout is retried")
    g.add_argument("--extra-body", default=None, metavar="JSON",
                   help="a JSON object merged into every request (provider-specific "
                        "fields, e.g. '{\"top_k\": 20}')")
    g.add_argument("--show-reward", action="store_true", default=None,
                   help="--agent tools: score every action and show the reward in the "
                        "tool's result (Try Again); without it, the submitted answer is "
                        "scored (ReAct)")


def _opt(args: argparse.Namespace, name: str) -> Any:
    value = getattr(args, name)
    return MODEL_DEFAULTS.get(name) if value is None else value


def _model(args: argparse.Namespace) -> ModelConfig | None:
    if args.model is None:
        return None
    from intercode.llm.client import ModelConfig

    return ModelConfig(model=args.model, base_url=args.base_url,
                       api_key_env=_opt(args, "api_key_env"),
                       temperature=_opt(args, "temperature"),
                       max_tokens=_opt(args, "max_tokens"), top_p=args.top_p,
                       timeout=_opt(args, "llm_timeout"), retries=_opt(args, "llm_retries"),
                       reasoning_effort=args.reasoning_effort, stream=bool(args.stream),
                       extra_body=(parse_extra_body(args.extra_body)
                                   if args.extra_body is not None else {}))


def _strategy(args: argparse.Namespace) -> StrategyOptions:
    from intercode.agents.llm import StrategyOptions

    return StrategyOptions(observation_chars=args.observation_chars,
                           observation_rows=args.observation_rows,
                           dialogue_limit=args.dialogue_limit,
                           refine_turns=_opt(args, "refine_turns"),
                           show_reward=bool(args.show_reward))


def _refuse_inapplicable(args: argparse.Namespace) -> None:
    """Refuse options that do nothing for the chosen environment or agent (a silently
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
                                ("--no-gold-cache", "gold_cache", args.no_gold_cache)):
        if given and option not in options:
            takers = [b.name for b in benchmarks() if option in b.options]
            raise ConfigError(f"{flag} applies only to the {' and '.join(takers) or 'no'} "
                              f"environment, not {args.env}")
    if args.mysql_url is not None and args.backend != "mysql":
        raise ConfigError("--mysql-url needs --backend mysql")
    agent = getattr(args, "agent", None)
    if agent is None:
        return
    if args.trajectories is not None and agent != "replay":
        raise ConfigError(f"--trajectories applies only to --agent replay, not {agent}")
    if agent not in STRATEGIES:
        for name in (*MODEL_DEFAULTS, *MODEL_OPTIONS):
            if getattr(args, name) is not None:
                raise ConfigError(f"--{name.replace('_', '-')} applies only to LLM agents "
                                  f"({', '.join(STRATEGIES)}), not {agent}")
    if agent == "tools":
        for flag, given in (("--dialogue-limit", args.dialogue_limit),
                            ("--refine-turns", args.refine_turns)):
            if given is not None:
                raise ConfigError(f"{flag} does not apply to --agent tools (its dialogue is "
                                  "kept whole; the turn limit bounds it)")
    if args.show_reward and agent != "tools":
        raise ConfigError(f"--show-reward applies only to --agent tools, not {agent} (Try "
                          "Again always shows the reward, ReAct never)")


ALLOWED_HOST_HELP = ("a Host (and browser Origin) the server answers besides its own "
                     "address (on loopback: localhost, 127.0.0.1, [::1] with its port); "
                     "no port: any; repeatable (docs/serving.md)")


def _add_serving(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("serving")
    g.add_argument("--host", default="127.0.0.1",
                   help="address to listen on (127.0.0.1: this machine only)")
    g.add_argument("--port", type=integer(0, 65535), required=True,
                   help="port to listen on (0: any free one, printed at start)")
    g.add_argument("--max-sessions", type=integer(1, 4096), default=64,
                   help="client sessions at once, each with its own sandboxes (64); "
                        "more are refused as busy")
    g.add_argument("--warm", type=integer(0, 4096), default=4,
                   help="idle environments kept started for the next sessions (4)")
    g.add_argument("--idle-timeout", type=seconds(), default=600.0,
                   help="close a session idle this many seconds (600)")
    g.add_argument("--token-env", default=None, metavar="VAR",
                   help="require the bearer token held by this environment variable")
    g.add_argument("--allowed-host", action="append", default=None, metavar="NAME[:PORT]",
                   help=ALLOWED_HOST_HELP)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every subcommand."""
    parser = Parser(prog="intercode", description=__doc__)
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = parser.add_subparsers(dest="command")

    ev = sub.add_parser("eval", help="evaluate an agent on a dataset")
    _add_common(ev)
    ev.add_argument("--agent", default="gold", choices=list(AGENTS),
                    help="gold, replay, human, or an LLM strategy: single-turn, try-again "
                         "(default 10 turns), react (10), plan-solve (plan + 3 repairs), "
                         "tools (native function calling, 10)")
    ev.add_argument("--trajectories", help="recorded episodes for --agent replay")
    _add_model(ev)
    ev.add_argument("--tasks", help="task indices, e.g. 0-99,120 (default: all)")
    ev.add_argument("--workers", type=integer(1, MAX_WORKERS), default=2,
                    help="episodes at once (2)")
    ev.add_argument("--executor", choices=["local", "ray"], default="local",
                    help="local: worker processes on this machine; ray: actors on a Ray "
                         "cluster, one per --workers (pip install 'intercode[ray]'; "
                         "docs/scaling.md) (local)")
    ev.add_argument("--ray-address", default=None, metavar="ADDRESS",
                    help="ray: the cluster: auto (the one started with `ray start` here), "
                         "local (a new one in this process), ray://HOST:PORT, HOST:PORT "
                         "(default: $RAY_ADDRESS, else local)")
    ev.add_argument("--ray-actor-cpus", type=number(0, 1024, low_open=True), default=None,
                    metavar="CPUS",
                    help="ray: CPUs each actor reserves (1; less for agents that mostly "
                         "wait for a model, e.g. 0.25)")
    ev.add_argument("--turns", type=integer(1), default=None, help="turn limit per episode")
    ev.add_argument("--output", default=None,
                    help="run folder (default: runs/<env>-<dataset>-<agent>-<time>); "
                         "locked while the run lives")
    ev.add_argument("--resume", action="store_true", help="finish an interrupted run")
    ev.add_argument("--upstream-quirks", action="store_true",
                    help="run actions as upstream did (quote stripping, stateless exec)")
    ev.add_argument("--no-progress", action="store_true")

    va = sub.add_parser("validate", help="check that every gold solution scores 1.0")
    _add_common(va)
    va.add_argument("--workers", type=integer(1, MAX_WORKERS), default=2)
    va.add_argument("--output", default=None, help="also keep the run folder here")
    va.add_argument("--json", action="store_true", help="print the report as JSON")

    pl = sub.add_parser("play", help="be the agent: type commands, then submit")
    _add_common(pl)
    pl.add_argument("--task", type=integer(0), default=None, help="task index (default: random)")

    rp = sub.add_parser("report", help="an HTML report of one run or several (self-contained)")
    rp.add_argument("runs", nargs="+", metavar="RUN",
                    help="a run folder, its results.jsonl, or an InterCode results .json file")
    rp.add_argument("-o", "--output", default=None,
                    help="the .html file (default: RUN/report.html for one run folder, "
                         "else ./report.html)")

    cp = sub.add_parser("compare", help="compare two runs of the same tasks, task by task")
    cp.add_argument("run_a", metavar="RUN_A",
                    help="a run folder, its results.jsonl, or an InterCode result file")
    cp.add_argument("run_b", metavar="RUN_B", help="the run compared with RUN_A (B - A)")
    cp.add_argument("--json", action="store_true", help="print the comparison as JSON")
    cp.add_argument("--resamples", type=integer(1, 1_000_000), default=10000,
                    help="bootstrap resamples of the tasks (10000)")
    cp.add_argument("--seed", type=integer(0), default=0, help="bootstrap seed (0)")

    sh = sub.add_parser("show", help="a run's summary, or one episode's transcript")
    sh.add_argument("run", help="a run folder, its results.jsonl, or an InterCode results "
                                "file (.json)")
    sh.add_argument("--task", type=integer(0), default=None,
                    help="show this task's episode: what the model saw, its replies, the "
                         "actions and observations")
    sh.add_argument("--json", action="store_true",
                    help="print the summary (or the episode's record) as JSON")

    _add_serve(sub)

    ex = sub.add_parser("export", help="write a run in another tool's format")
    ex.add_argument("format", choices=["inspect"],
                    help="inspect: an Inspect AI log (.eval), for inspect view")
    ex.add_argument("run", help="a run folder, its results.jsonl, or an InterCode results "
                                "file (.json)")
    ex.add_argument("-o", "--output", required=True, help="the log file (FILE.eval)")

    sub.add_parser("doctor", help="check that this machine can run the sandboxes")
    im = sub.add_parser("image", help="the sandbox's root file system and Docker images "
                                      "(docs/images.md)")
    images = im.add_subparsers(dest="image_command", metavar="COMMAND", required=True)
    ib = images.add_parser("build", help="build the pinned root file system of a profile "
                                         "(once; cached) and with --docker import it")
    ib.add_argument("--profile", default="base", choices=["base", "ctf"],
                    help="base (Bash, Python, SQL) or ctf (+ the CTF tools) (base)")
    ib.add_argument("--packages", default="", metavar="A,B",
                    help="more Debian packages (e.g. nodejs)")
    ib.add_argument("--env", default=None, metavar="ENV",
                    help="the profile and packages an environment declares instead")
    ib.add_argument("--docker", action="store_true",
                    help="also docker import it as intercode/sandbox:<profile>-<id>")
    ib.add_argument("--rebuild", action="store_true",
                    help="build again even if built (new package versions: a new identity)")
    images.add_parser("list", help="the built roots and imported images")
    ds = sub.add_parser("datasets", help="list the datasets")
    ds.add_argument("env", nargs="?", default=None)
    return parser


def _add_serve(sub: Any) -> None:
    """``intercode serve PROTOCOL``: an environment as a server (one subcommand each)."""
    sv = sub.add_parser("serve", help="serve an environment to agents and trainers over a "
                                      "protocol (MCP, OpenEnv)")
    protocols = sv.add_subparsers(dest="protocol", metavar="PROTOCOL", required=True)
    mc = protocols.add_parser("mcp", help="a Model Context Protocol server (stdio or HTTP)")
    _add_common(mc, env_option=True)
    mc.add_argument("--transport", choices=["stdio", "http"], default="stdio",
                    help="stdio (one client: the process that started the server) or "
                         "streamable HTTP (many clients) (stdio)")
    mc.add_argument("--host", default=None,
                    help="http: address to listen on (127.0.0.1; another needs --token-env)")
    mc.add_argument("--port", type=integer(0, 65535), default=None,
                    help="http: port (8000; 0: any free port, printed at start)")
    mc.add_argument("--max-sessions", type=integer(1, MAX_WORKERS), default=None,
                    help="http: client sessions with an episode at once; past them a "
                         "client gets a busy error (64)")
    mc.add_argument("--warm", type=integer(0, MAX_WORKERS), default=None,
                    help="http: idle environments kept started for the next sessions (4)")
    mc.add_argument("--idle-timeout", type=seconds(), default=600.0,
                    help="seconds without a call after which a session is closed (600)")
    mc.add_argument("--reconnect-grace", type=seconds(), default=None,
                    help="http: seconds a client whose event stream closed has to reopen "
                         "it (or call) before it is taken for gone and its session "
                         "closed (5)")
    mc.add_argument("--token-env", default=None, metavar="VAR",
                    help="http: require `Authorization: Bearer <token>`, the token read "
                         "from the environment variable VAR")
    mc.add_argument("--allowed-host", action="append", default=None, metavar="NAME[:PORT]",
                    help="http: " + ALLOWED_HOST_HELP)
    oe = protocols.add_parser(
        "openenv", help="the OpenEnv protocol (HTTP and WebSocket; TRL's environments); "
                        "client: intercode.integrations.serve.openenv.IntercodeEnv")
    _add_common(oe, env_option=True)
    _add_serving(oe)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script."""
    # `intercode ... | head` ends quietly; restored after, for callers in the same process
    previous = signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    try:
        return _main(argv)
    finally:
        signal.signal(signal.SIGPIPE, previous)


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")
    command = args.command or "eval"
    if args.command is None:
        args = parser.parse_args(["eval", *(argv or [])])
    try:
        if command in ("eval", "validate", "play", "serve"):
            _choose_rootfs(args.rootfs)
            _refuse_inapplicable(args)
            _check_output(args)
            args.backend = args.backend or "sqlite"
            args.network = "host" if args.host_network else bool(args.network)
            if args.network:
                from intercode.sandbox import require_network

                # slirp4netns missing: one line, not per task
                require_network(args.network, args.sandbox)
        return COMMANDS[command](args)
    except IntercodeError as exc:
        print(f"intercode: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # the machine, not a bug: one line (the traceback with -v)
        logging.getLogger("intercode").debug("traceback", exc_info=True)
        print(f"intercode: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("\nintercode: interrupted; finished episodes are saved", file=sys.stderr)
        return 130


def _choose_rootfs(choice: str | None) -> None:
    """``--rootfs``: what ``INTERCODE_ROOTFS`` says for this process and its workers."""
    if choice is None:
        return
    if choice not in ("pinned", "host", "/"):
        root = Path(choice).expanduser()
        if not (root / "usr").is_dir() or not (root / "etc").is_dir():
            raise ConfigError(f"--rootfs {choice}: not a root file system (no usr/ and etc/); "
                              "use pinned, host or a prepared root directory")
        choice = str(root.resolve())
    os.environ["INTERCODE_ROOTFS"] = choice


def _check_output(args: argparse.Namespace) -> None:
    output = getattr(args, "output", None)
    if output is not None and not output.strip():
        raise ConfigError("--output must not be empty (name a run folder)")


def cmd_eval(args: argparse.Namespace) -> int:
    """``intercode eval``."""
    from intercode.datasets import load_dataset
    from intercode.datasets.registry import is_dataset_file
    from intercode.report.summary_view import print_summary
    from intercode.runner.run import RunConfig, execute, parse_task_ranges

    dataset = _dataset(args)
    if args.output is None:
        if args.resume:
            raise ConfigError("--resume needs the --output of the run to finish")
        stamp = time.strftime("%Y%m%d-%H%M%S")
        label = Path(dataset).stem if is_dataset_file(dataset) else dataset
        args.output = f"runs/{args.env}-{label}-{args.agent}-{stamp}"
    tasks = None
    if args.tasks is not None:
        tasks = parse_task_ranges(args.tasks, len(load_dataset(dataset, args.env)))
    turns = args.turns if args.turns is not None else DEFAULT_TURNS.get(args.agent)
    cfg = RunConfig(env=args.env, dataset=dataset, agent=args.agent, output=Path(args.output),
                    workers=args.workers, tasks=tasks, max_turns=turns,
                    model=_model(args), strategy=_strategy(args),
                    trajectories=args.trajectories, settings=_settings(args),
                    resume=args.resume, executor=args.executor, ray_address=args.ray_address,
                    ray_actor_cpus=args.ray_actor_cpus)
    summary = execute(cfg, progress=not args.no_progress)
    print_summary(summary)
    print(f"results    {Path(args.output) / 'results.jsonl'}")
    return 0 if summary["errors"] == 0 else 1


def cmd_validate(args: argparse.Namespace) -> int:
    """``intercode validate``."""
    from intercode.validate import format_report, validate

    report = validate(args.env, _dataset(args), workers=args.workers,
                      output=Path(args.output) if args.output is not None else None,
                      settings=_settings(args))
    print(json.dumps(report, indent=2) if args.json else format_report(report))
    return 0 if not report["unexpected"] else 1


def cmd_play(args: argparse.Namespace) -> int:
    """``intercode play``."""
    from intercode.play import play

    benchmark = get(args.env)
    dataset = args.dataset or benchmark.play_dataset or benchmark.default_dataset
    return play(args.env, dataset, args.task, _limits(args), backend=args.backend,
                mysql_url=args.mysql_url, network=args.network)


def cmd_report(args: argparse.Namespace) -> int:
    """``intercode report``."""
    from intercode.report.build import write_report

    path = write_report(args.runs, args.output)
    print(f"report     {path}")
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    """``intercode compare``."""
    from intercode.report.compare import compare_runs
    from intercode.report.compare_view import print_comparison
    from intercode.report.runs import load_run

    result = compare_runs(load_run(args.run_a), load_run(args.run_b),
                          resamples=args.resamples, seed=args.seed)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print_comparison(result)
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    """``intercode show``."""
    from intercode.report.show import show

    show(args.run, task=args.task, as_json=args.json)
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    """An intercode run as an Inspect log."""
    from intercode.integrations.inspectai import require

    require("intercode export inspect")
    from intercode.integrations.inspectai.export import export_run

    path = export_run(args.run, args.output)
    print(f"wrote {path}")
    return 0


def cmd_serve_openenv(args: argparse.Namespace) -> int:
    """``intercode serve openenv``: until interrupted."""
    from intercode.integrations.serve.sessions import ServeConfig

    try:
        from intercode.integrations.serve.openenv_server import serve_openenv
    except ModuleNotFoundError as exc:  # openenv-core (the `serve` extra) is missing
        raise ConfigError(str(exc)) from None
    token = _token(args)
    config = ServeConfig(env=args.env, dataset=_dataset(args), settings=_settings(args),
                         max_sessions=args.max_sessions, warm=args.warm,
                         idle_timeout=args.idle_timeout)
    from intercode.integrations.serve.hosts import require_token_off_loopback

    require_token_off_loopback(args.host, token)
    serve_openenv(config, host=args.host, port=args.port, token=token,
                  log_level="info" if args.verbose else "warning",
                  allowed_hosts=args.allowed_host or ())
    return 0


def cmd_doctor(args: argparse.Namespace) -> int:
    """``intercode doctor``."""
    from intercode.doctor import run_doctor

    return run_doctor()


def cmd_image(args: argparse.Namespace) -> int:
    """``intercode image build|list``."""
    from intercode.sandbox import rootfs
    from intercode.sandbox.docker import images

    if args.image_command == "list":
        found = rootfs.built()
        for root in found:
            added = ",".join(root.manifest.get("extra", []))
            print(f"rootfs {root.short}  {root.profile}{'+' + added if added else ''}  "
                  f"{len(root.manifest.get('versions', {}))} packages  built "
                  f"{root.manifest.get('built', '?')}  {root.path}")
        if not found:
            print(f"no root file system built yet (in {rootfs.cache_root()})")
        try:
            images.require_engine()
        except IntercodeError as exc:
            print(f"docker: {exc}")
            return 0
        for image in images.docker_images():
            print(f"docker {image['tag']}  {image['id']}  {image['size']}")
        return 0
    profile: str = args.profile
    extra = [p.strip() for p in args.packages.split(",") if p.strip()]
    if args.env is not None:
        spec = get(args.env)
        profile, extra = spec.sandbox_profile, [*spec.sandbox_packages, *extra]
    rootfs.packages(profile, extra)  # a malformed name: one line before anything runs
    if args.docker:
        images.require_engine()
    root = rootfs.build(profile, extra, rebuild=args.rebuild)
    print(f"rootfs {root.short}  {root.profile}  {root.path}")
    if args.docker:
        print(f"docker {images.docker_import(root)}")
    return 0


def cmd_datasets(args: argparse.Namespace) -> int:
    """``intercode datasets``."""
    if args.env is not None:
        get(args.env)  # an unknown environment: one line
    for benchmark in benchmarks():
        if args.env is None or benchmark.name == args.env:
            for name in benchmark.datasets:
                print(f"{name:16s} {benchmark.name}")
    return 0


def _token(args: argparse.Namespace) -> str | None:
    """The bearer token ``--token-env`` names (None without it; unset is an error)."""
    if args.token_env is None:
        return None
    token = os.environ.get(args.token_env)
    if not token:
        raise ConfigError(f"--token-env {args.token_env}: that environment variable is not "
                          "set or empty")
    return token


def cmd_serve(args: argparse.Namespace) -> int:
    """``intercode serve PROTOCOL``."""
    return SERVE_COMMANDS[args.protocol](args)


def cmd_serve_mcp(args: argparse.Namespace) -> int:
    """``intercode serve mcp``."""
    try:
        from intercode.integrations.serve.mcp_server import serve
    except ModuleNotFoundError as exc:
        if (exc.name or "").split(".")[0] not in ("mcp", "mcp_types", "uvicorn", "starlette"):
            raise
        raise ConfigError("intercode serve mcp needs the mcp package: "
                          "pip install 'intercode[serve]'") from None
    from intercode.integrations.serve.sessions import ServeConfig

    http = args.transport == "http"
    if not http:
        for flag, given in (("--host", args.host), ("--port", args.port),
                            ("--max-sessions", args.max_sessions), ("--warm", args.warm),
                            ("--reconnect-grace", args.reconnect_grace),
                            ("--token-env", args.token_env),
                            ("--allowed-host", args.allowed_host)):
            if given is not None:
                raise ConfigError(f"{flag} applies only to --transport http (a stdio server "
                                  "has one client)")
    token = _token(args)
    max_sessions = (args.max_sessions or 64) if http else 1
    config = ServeConfig(env=args.env, dataset=_dataset(args), settings=_settings(args),
                         max_sessions=max_sessions,
                         warm=min(max_sessions, 4 if args.warm is None else args.warm),
                         idle_timeout=args.idle_timeout,
                         reconnect_grace=args.reconnect_grace or 5.0)
    return serve(config, args.transport, host=args.host or "127.0.0.1",
                 port=8000 if args.port is None else args.port, token=token,
                 allowed_hosts=args.allowed_host or ())


SERVE_COMMANDS = {"mcp": cmd_serve_mcp, "openenv": cmd_serve_openenv}

COMMANDS = {"eval": cmd_eval, "validate": cmd_validate, "play": cmd_play,
            "report": cmd_report, "compare": cmd_compare, "show": cmd_show, "doctor": cmd_doctor,
            "datasets": cmd_datasets, "serve": cmd_serve, "export": cmd_export,
            "image": cmd_image}
