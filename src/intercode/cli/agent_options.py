"""``intercode eval``'s agent options: the model of the LLM agents, their strategy, and the
refusal of the options the chosen agent does not use."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from intercode.agents.names import STRATEGIES
from intercode.cli.argtypes import DAY, integer, number, seconds
from intercode.errors import ConfigError
from intercode.llm.config import REASONING_EFFORTS, parse_extra_body

if TYPE_CHECKING:
    from intercode.agents.options import StrategyOptions
    from intercode.llm.config import ModelConfig

__all__ = ["add_model_options", "model_config", "refuse_inapplicable", "strategy_options"]

MODEL_DEFAULTS = {"api_key_env": "OPENAI_API_KEY", "temperature": 0.0, "max_tokens": 512,
                  "llm_timeout": 60.0, "llm_retries": 6, "llm_connect_wait": 120.0,
                  "refine_turns": 3}
MODEL_OPTIONS = ("model", "base_url", "top_p", "observation_chars", "observation_rows",
                 "dialogue_limit", "reasoning_effort", "stream", "extra_body", "show_reward")


def add_model_options(p: argparse.ArgumentParser) -> None:
    """The ``model (LLM agents)`` option group."""
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
    g.add_argument("--llm-connect-wait", type=number(0, DAY), default=None, metavar="SECONDS",
                   help="how long to keep trying an endpoint that has not answered yet "
                        "(nothing listening, a server still loading) before the run "
                        "stops (120; 0: stop at the first refused connection)")
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


def model_config(args: argparse.Namespace) -> ModelConfig | None:
    """The model ``--model`` and its options name (None without ``--model``)."""
    if args.model is None:
        return None
    from intercode.llm.config import ModelConfig

    return ModelConfig(model=args.model, base_url=args.base_url,
                       api_key_env=_opt(args, "api_key_env"),
                       temperature=_opt(args, "temperature"),
                       max_tokens=_opt(args, "max_tokens"), top_p=args.top_p,
                       timeout=_opt(args, "llm_timeout"), retries=_opt(args, "llm_retries"),
                       connect_wait=_opt(args, "llm_connect_wait"),
                       reasoning_effort=args.reasoning_effort, stream=bool(args.stream),
                       extra_body=(parse_extra_body(args.extra_body)
                                   if args.extra_body is not None else {}))


def strategy_options(args: argparse.Namespace) -> StrategyOptions:
    """The LLM strategy's options."""
    from intercode.agents.options import StrategyOptions

    return StrategyOptions(observation_chars=args.observation_chars,
                           observation_rows=args.observation_rows,
                           dialogue_limit=args.dialogue_limit,
                           refine_turns=_opt(args, "refine_turns"),
                           show_reward=bool(args.show_reward))


def refuse_inapplicable(args: argparse.Namespace) -> None:
    """Refuse agent options that do nothing for the chosen agent (none for a command
    without ``--agent``)."""
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
