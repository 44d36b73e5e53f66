"""A served intercode environment (``intercode serve openenv``) as the TRL class uses one.

:class:`ServedEnvironment` gives :class:`~intercode.integrations.trl.IntercodeTrlEnv`
the calls it makes of an in-process environment (``reset``, ``step``, ``evaluate``,
``close``) over one OpenEnv session at a time, and keeps a training run going through
what a shared server does:

* **A busy server.** TRL builds one environment per rollout of a generation batch and
  resets them all before the model writes a word, so a batch larger than the server's
  ``--max-sessions`` finds it full. A session is therefore taken late and given back
  early: ``reset`` tries once and, when the server is full, leaves the episode pending;
  the episode's first action waits for a free session (up to ``wait`` seconds, as other
  rollouts end theirs) and starts the task there; a finished episode (submitted, out of
  turns, or scored by :meth:`evaluate`) closes its session at once. An action that still
  finds no session is answered with :class:`Busy`, which the TRL class shows the model
  as a tool result; an episode that never got one scores 0.0 as an environment failure.
* **Idle expiry and restarts.** The client connects again by itself; an episode whose
  session the server ended (``--idle-timeout`` shorter than a generation round) is lost
  and said so (:class:`Lost`), and the next episode starts normally.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

__all__ = ["Busy", "Lost", "ServedEnvironment"]

RETRY_PAUSE = 0.25  # seconds between two tries for a session, at first (doubles, to 2 s)


class Busy(RuntimeError):
    """Every session of the server is in use: the action did not run."""


class Lost(RuntimeError):
    """The server ended the episode's session (idle expiry, a restart)."""


@dataclass
class Scored:
    """What ``evaluate()`` gives, as an in-process environment's evaluation does."""

    reward: float


@dataclass
class PendingTask:
    """An episode that waits for a session: its task (None: the server draws one)."""

    task: int | None


@dataclass
class TaskRef:
    """The episode's task (``index``), as ``env.unwrapped.task`` gives it in process."""

    index: int


class ServedEnvironment:
    """One rollout's episodes on an ``intercode serve openenv`` server at ``url``."""

    def __init__(self, url: str, *, token: str | None = None, max_turns: int | None = None,
                 wait: float = 30.0, message_timeout: float = 900.0) -> None:
        from intercode.integrations.serve.openenv import IntercodeEnvClient

        def make_client() -> IntercodeEnvClient:
            # plain (blocking) calls on OpenEnv's client, which runs its own event loop
            return IntercodeEnvClient(base_url=url, token=token,
                                      message_timeout_s=message_timeout)

        self._make_client = make_client
        self.url = url
        self.max_turns = max_turns
        self.wait = wait
        self._client: Any = None
        self._pending: PendingTask | None = None  # an episode waiting for a session
        self.task: TaskRef | None = None
        self.turns = 0
        self.unwrapped = self

    # -- what IntercodeTrlEnv calls -----------------------------------------------------

    def check(self, benchmark: str, dataset: str, reward: str) -> None:
        """Check the server answers and serves ``benchmark``'s ``dataset`` with the
        ``reward`` mode: a wrong url, token or server is a one-line
        :class:`~intercode.errors.ConfigError` when the trainer builds its environments."""
        from intercode.errors import ConfigError
        from intercode.integrations.serve.openenv import ServerError

        client = self._make_client()
        try:
            state = client.state()
        except ServerError as exc:
            if exc.code == "busy":
                return  # a full server: it answers, and says what it serves later
            raise ConfigError(f"the server at {self.url}: {exc}") from None
        except ConnectionError as exc:
            raise ConfigError(str(exc)) from None
        finally:
            client.close()
        served = (state.env, state.dataset, state.reward)
        if served != (benchmark, dataset, reward):
            raise ConfigError(f"the server at {self.url} serves {state.env} on {state.dataset} "
                              f"with the {state.reward} reward, not {benchmark} on {dataset} "
                              f"with the {reward} reward")

    def reset(self, options: dict[str, Any] | None = None,
              seed: int | None = None) -> tuple[str, dict[str, Any]]:
        """Start the episode of ``options["task"]`` (else of a task the server draws);
        on a full server it waits for the first action, and the query is then empty (the
        row's prompt holds it)."""

        task = (options or {}).get("task")
        self._release()
        self.turns = 0
        self.task = TaskRef(-1 if task is None else int(task))
        query = self._try_start(task)
        if query is not None:
            return query, {"task": self.task.index}
        self._pending = PendingTask(task)
        if task is None:  # the query is needed now: wait for a session here
            query = self._acquire()
            return query, {"task": self.task.index}
        return "", {"task": self.task.index, "pending": True}

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """Run one action: (output, reward, terminated, truncated, info)."""
        from intercode.integrations.serve.openenv import ServerError

        if self._pending is not None:
            self._acquire()
        try:
            result = self._client.step(action)
        except ServerError as exc:
            if exc.code == "unknown_session":
                self._release()
                raise Lost("the server ended this episode's session (it was idle longer "
                           "than its --idle-timeout, or restarted)") from exc
            raise
        self.turns += 1
        terminated = bool(result.done)
        truncated = (not terminated and self.max_turns is not None
                     and self.turns >= self.max_turns)
        if terminated or truncated:
            final = float(result.reward or 0.0)
            if truncated:  # the paper's reward of the final state, as in process
                final = self._scored()
            self._release()
            return result.observation.output, final, terminated, truncated, dict(
                result.observation.info)
        return (result.observation.output, float(result.reward or 0.0), False, False,
                dict(result.observation.info))

    def evaluate(self) -> Scored:
        """The final state's score (a rollout that never submitted); ends the session."""
        if self._client is None:
            raise Lost("the episode has no session to score (it never got one, or the "
                       "server ended it)")
        try:
            return Scored(self._scored())
        finally:
            self._release()

    def close(self) -> None:
        """Give the session back."""
        self._release()
        self._pending = None

    # -- sessions ------------------------------------------------------------------------

    def _start(self, task: int | None) -> str:
        if self._client is None:
            self._client = self._make_client()
        from intercode.integrations.serve.openenv import ServerError

        try:
            result = self._client.reset(task=task)
        except ServerError as exc:
            if exc.code != "unknown_session":
                raise
            result = self._client.reset(task=task)  # the client connected again
        self._pending = None
        observation = result.observation
        self.task = TaskRef(int(observation.task) if observation.task is not None else -1)
        return str(observation.query)

    def _try_start(self, task: int | None) -> str | None:
        """:meth:`_start`, or ``None`` (the client closed) when the server has no free
        session or cannot be reached now."""
        from intercode.integrations.serve.openenv import ServerError

        try:
            return self._start(task)
        except ServerError as exc:
            if exc.code not in ("busy", "unknown_session"):
                raise
        except ConnectionError:
            pass
        self._release()
        return None

    def _acquire(self) -> str:
        """Start the pending episode on a session, waiting for one up to ``wait`` s; the
        task's query."""

        assert self._pending is not None
        deadline = time.monotonic() + self.wait
        pause = RETRY_PAUSE
        while True:
            query = self._try_start(self._pending.task)
            if query is not None:
                return query
            if time.monotonic() + pause > deadline:
                raise Busy(f"the server at {self.url} has no free session (all in use by "
                           "other rollouts); this action did not run. Try again; a server "
                           "with --max-sessions at least the generation batch avoids this")
            time.sleep(pause)
            pause = min(pause * 2, 2.0)

    def _scored(self) -> float:
        assert self._client is not None
        return float(self._client.evaluate().reward)

    def _release(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            try:
                client.close()
            except Exception:  # the session is gone already: nothing to give back
                pass
