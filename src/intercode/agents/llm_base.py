"""What the LLM strategies share: settings, the client, call accounting, observation cuts.

Every model call's tokens (reasoning tokens too) and latency go into the action's
``meta`` (the episode log); the raw reply too, since the action is parsed out of it, and
the ids of the messages each call sent (``prompts``; the messages themselves in
:meth:`LlmPolicy.episode_messages`).
"""

from __future__ import annotations

from typing import Any

from intercode.agents.base import Action, Policy
from intercode.agents.options import StrategyOptions
from intercode.agents.parsing import Parsed, language, retry_message, truncate_observation
from intercode.benchmarks import get
from intercode.datasets import Task
from intercode.llm.client import ChatClient, Completion, Message
from intercode.llm.message_ids import stored

__all__ = ["OBSERVATION_LIMITS", "LlmPolicy", "StrategyOptions"]

# upstream's observation cuts (characters, rows) and dialogue limits
# (native tool calling: Try Again's)
OBSERVATION_LIMITS = {"try-again": (1000, 50), "single-turn": (1000, 50), "react": (350, 25),
                      "plan-solve": (1000, 25), "tools": (1000, 50)}


class LlmPolicy(Policy):
    """What the strategies share: the client, call accounting, observation cuts."""

    name = "llm"

    def __init__(self, env: str, client: ChatClient, options: StrategyOptions | None = None):
        self.benchmark = get(env)  # an unknown environment: one line
        self.env = env
        self.client = client
        self.options = options or StrategyOptions()
        chars, rows = OBSERVATION_LIMITS[self.name]
        self.chars = self.options.observation_chars or chars
        self.rows = self.options.observation_rows or rows
        self.task: Task | None = None
        self._calls: list[Completion] = []
        self._replies: list[str] = []
        self._prompts: list[list[str]] = []
        self._unattached: list[dict[str, Any]] = []
        self._seen: dict[str, dict[str, Any]] = {}

    def reset(self, task: Task) -> None:
        """Start an episode."""
        self.task = task
        self._calls, self._replies, self._unattached, self._prompts = [], [], [], []
        self._seen = {}

    def episode_messages(self) -> dict[str, dict[str, Any]]:
        """Every message this episode's calls sent, by id."""
        return dict(self._seen)

    def episode_extra(self) -> dict[str, Any]:
        """Model calls that produced no action (the last answer of a cut-off episode)."""
        if self._calls:
            self._unattached.append(self._meta())
        return {"llm_unattached": self._unattached} if self._unattached else {}

    def _ask(self, messages: list[Message], stop: list[str] | None = None) -> str:
        return self._call(messages, stop=stop).text

    def _call(self, messages: list[Message], stop: list[str] | None = None,
              tools: list[dict[str, Any]] | None = None) -> Completion:
        ids = []
        for message in messages:
            mid, kept = stored(message)
            self._seen.setdefault(mid, kept)
            ids.append(mid)
        completion = self.client.complete(messages, stop=stop, tools=tools)
        self._prompts.append(ids)
        self._calls.append(completion)
        self._replies.append(self._reply_text(completion))
        return completion

    def _reply_text(self, completion: Completion) -> str:
        """What the record keeps as the reply (its text)."""
        return completion.text

    def _meta(self, **more: Any) -> dict[str, Any]:
        calls = self._calls
        meta: dict[str, Any] = {
            "calls": len(calls),
            "prompt_tokens": sum(c.prompt_tokens or 0 for c in calls),
            "completion_tokens": sum(c.completion_tokens or 0 for c in calls),
            "latency_s": round(sum(c.latency_s for c in calls), 6),
            "attempts": sum(c.attempts for c in calls),
            "reply": self._replies[-1] if self._replies else "",
            "prompts": list(self._prompts),
            **more,
        }
        if len(self._replies) > 1:
            meta["replies"] = list(self._replies)
        if any(c.reasoning_tokens is not None for c in calls):
            meta["reasoning_tokens"] = sum(c.reasoning_tokens or 0 for c in calls)
        if any(c.finish_reason == "length" for c in calls):
            meta["truncated_reply"] = True
        adjusted = sorted({note for c in calls for note in c.adjusted})
        if adjusted:
            meta["adjusted"] = adjusted
        self._calls, self._replies, self._prompts = [], [], []
        return meta

    def _action(self, parsed: Parsed, reply: str, note: str | None = None,
                **meta: Any) -> Action:
        info = self._meta(**meta)
        if parsed.kind == "none":
            return Action(reply, valid=False, note=note or retry_message(language(self.env)),
                          meta=info)
        return Action(parsed.text, submit=parsed.kind == "submit", meta=info)

    def _cut(self, observation: str, chars: int | None = None) -> str:
        return truncate_observation(observation, chars or self.chars, self.rows)
