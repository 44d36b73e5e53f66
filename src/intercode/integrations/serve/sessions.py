"""Episodes for many clients at once: sessions on a pool of warm environments.

A server (MCP, OpenEnv) gives each client session a :class:`Session`; the session
borrows an environment (its sandboxes started) from the :class:`SessionPool` and gives
it back when it closes, so the next session only pays a reset (milliseconds), never a
sandbox start. Every episode starts with ``reset``, which restores the pristine tree and
kills every process the previous episode left, so a returned environment carries nothing
from one client to the next.

The pool caps live sessions (:class:`Busy` past the cap), closes sessions idle longer
than ``idle_timeout`` (:meth:`SessionPool.reap`, called by the servers on a timer), and
keeps at most ``warm`` idle environments. An environment that failed (an
infrastructure error, or the agent broke its own sandbox) is closed, never reused: its
session gets a fresh one at the next ``reset``.

Calls on a session are serialised by its lock; environment calls block, so async servers
run them in worker threads, which must live as long as the server (a
``ThreadPoolExecutor`` of their own, not ``anyio.to_thread``): bubblewrap's
``--die-with-parent`` is bound to the *thread* that started a sandbox, so a worker
thread that retires takes the sandboxes it started with it. All methods return plain
JSON-ready dicts.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from intercode.envs.base import IntercodeEnv
from intercode.envs.factory import make_env
from intercode.envs.info import ActionInfo, plain
from intercode.envs.pool import WarmPool, discard
from intercode.envs.settings import EnvSettings
from intercode.errors import (
    AgentFault,
    ConfigError,
    EnvStateError,
    IntercodeError,
    SandboxError,
    TaskUnavailable,
)

__all__ = ["MAX_CODE_CHARS", "InfrastructureError", "NoEpisode", "ServeConfig", "ServeError",
           "Session", "SessionPool", "UnknownSession"]

MAX_CODE_CHARS = 1 << 20  # one action: the Gymnasium action space's bound


class ServeError(IntercodeError):
    """A request the server refuses; ``code`` says which kind (for the protocol)."""

    code = "bad_request"


class Busy(ServeError):
    """Every session slot is taken."""

    code = "busy"


class UnknownSession(ServeError):
    """The session expired or never existed."""

    code = "unknown_session"


class NoEpisode(ServeError):
    """An action before ``reset`` or after the episode ended."""

    code = "no_episode"


class InfrastructureError(ServeError):
    """The server's side failed (a sandbox crashed); the session may ``reset`` again."""

    code = "infrastructure"


@dataclass(frozen=True)
class ServeConfig:
    """What a server serves and how many at once."""

    env: str
    dataset: str
    settings: EnvSettings = field(default_factory=EnvSettings)
    max_sessions: int = 64
    warm: int = 4
    idle_timeout: float = 600.0
    reconnect_grace: float = 5.0  # MCP over HTTP: see intercode.integrations.serve.mcp_http

    def __post_init__(self) -> None:
        if self.max_sessions < 1:
            raise ConfigError(f"max_sessions must be at least 1, got {self.max_sessions}")
        if self.warm < 0:
            raise ConfigError(f"warm must not be negative, got {self.warm}")
        if not self.idle_timeout > 0:
            raise ConfigError(f"idle_timeout must be positive, got {self.idle_timeout}")
        if not self.reconnect_grace > 0:
            raise ConfigError(f"reconnect_grace must be positive, got {self.reconnect_grace}")


class Session:
    """One client's episodes, on one environment at a time."""

    def __init__(self, pool: SessionPool, sid: str) -> None:
        self.pool = pool
        self.id = sid
        self.lock = threading.Lock()
        self.last_used = time.monotonic()
        self.env: IntercodeEnv | None = None
        self.closed = False
        self.episode_done = True

    # -- the episode ---------------------------------------------------------------------

    def reset(self, task: int | None = None, seed: int | None = None) -> dict[str, Any]:
        """Start an episode on ``task`` (else a task drawn with ``seed``)."""
        with self._use() as env:
            options = None if task is None else {"task": task}
            try:
                query, info = env.reset(seed=seed, options=options)
            except (TaskUnavailable, ConfigError) as exc:
                raise ServeError(str(exc)) from exc
            except AgentFault as exc:  # the last episode's agent broke it: a fresh one
                self._drop()
                raise InfrastructureError(f"reset failed: {exc}; call reset again") from exc
            self.episode_done = False
            return {"query": query, "task": info.get("task"), "dataset": info.get("dataset"),
                    "observation": query}

    def execute(self, code: str) -> dict[str, Any]:
        """Run one action; its output (and whether the episode ended)."""
        _check_code(code)
        with self._use() as env:
            self._need_episode()
            observation, reward, done, truncated, info = self._step(env, code)
            ran = ActionInfo.read(info)
            out: dict[str, Any] = {"output": observation, "exit_code": ran.exit_code,
                                   "timed_out": ran.timed_out, "done": done or truncated}
            if info.get("submitted") or info.get("skipped"):
                out["reward"] = float(reward)
            return out

    def evaluate(self) -> dict[str, Any]:
        """The score of the current state (Try Again), without ending the episode."""
        with self._use() as env:
            self._need_episode()
            try:
                result = env.evaluate()
            except AgentFault as exc:
                return self._fault(exc)
            except SandboxError as exc:
                self._drop()
                raise InfrastructureError(f"scoring failed: {exc}") from exc
            return {"reward": float(result.reward), "success": bool(result.success),
                    "parts": plain(result.info)}

    def submit(self, answer: str | None = None) -> dict[str, Any]:
        """Submit (with an answer where the environment takes one, e.g. a CTF flag)."""
        if answer is not None:
            _check_code(answer)
        with self._use() as env:
            self._need_episode()
            action = env.submit_keyword if not answer else f"{env.submit_keyword} {answer}"
            observation, reward, done, _, info = self._step(env, action)
            parts = {k: v for k, v in info.items() if k not in ("turn", "submitted")}
            return {"reward": float(reward), "success": bool(info.get("success")),
                    "done": done, "output": observation, "parts": plain(parts)}

    def query(self) -> str | None:
        """The current task's query (None before the first reset)."""
        env = self.env
        return None if env is None or env.task is None else env.task.query

    def close(self) -> None:
        """End the session and give its environment back to the pool."""
        with self.lock:
            if self.closed:
                return
            self.closed = True
            env, self.env = self.env, None
        self.pool._release(self, env)

    # -- internals -----------------------------------------------------------------------

    def _use(self) -> _Using:
        return _Using(self)

    def _need_episode(self) -> None:
        if self.env is None or self.env.task is None:
            raise NoEpisode("no episode: call reset first")
        if self.episode_done:
            raise NoEpisode("the episode has ended: call reset to start another")

    def _step(self, env: IntercodeEnv, action: str) -> tuple[str, float, bool, bool,
                                                              dict[str, Any]]:
        try:
            observation, reward, done, truncated, info = env.step(action)
        except EnvStateError as exc:
            raise NoEpisode(str(exc)) from exc
        except AgentFault as exc:  # what the agent did to its own sandbox: its outcome
            self._fault(exc)
            return (f"the episode ended: {exc}", 0.0, True, False,
                    {"submitted": True, "success": False, "agent_fault": str(exc)})
        except SandboxError as exc:
            self._drop()
            raise InfrastructureError(f"the sandbox failed: {exc}; call reset to start "
                                      "again") from exc
        if done or truncated:
            self.episode_done = True
        return observation, float(reward), done, truncated, info

    def _fault(self, exc: AgentFault) -> dict[str, Any]:
        self._drop()
        self.episode_done = True
        return {"reward": 0.0, "success": False, "parts": {"agent_fault": str(exc)},
                "done": True}

    def _drop(self) -> None:
        """Close the environment for good (never reused) and forget it."""
        env, self.env = self.env, None
        if env is not None:
            self.pool._discard(env)


class _Using:
    """``with session._use() as env``: the session's lock, an environment, the clock."""

    def __init__(self, session: Session) -> None:
        self.session = session

    def __enter__(self) -> IntercodeEnv:
        s = self.session
        if not s.lock.acquire(timeout=s.pool.config.idle_timeout):
            raise Busy("this session is busy with another call")
        try:
            if s.closed:
                raise UnknownSession("the session has ended")
            if s.env is None:
                s.env = s.pool._borrow()
            s.last_used = time.monotonic()
            return s.env
        except BaseException:
            s.lock.release()
            raise

    def __exit__(self, *exc: object) -> None:
        self.session.last_used = time.monotonic()
        self.session.lock.release()


def _check_code(code: Any) -> None:
    if not isinstance(code, str):
        raise ServeError(f"code must be a string, got {type(code).__name__}")
    if len(code) > MAX_CODE_CHARS:
        raise ServeError(f"the action is {len(code)} characters; at most {MAX_CODE_CHARS}")


class SessionPool:
    """Sessions and the warm environments they borrow (thread-safe)."""

    def __init__(self, config: ServeConfig,
                 factory: Callable[[], IntercodeEnv] | None = None) -> None:
        self.config = config
        self._factory = factory or (lambda: make_env(config.env, config.dataset,
                                                     config.settings))
        self._lock = threading.Lock()
        self._sessions: dict[str, Session] = {}
        # a returned environment is reset at once: what a client left running ends now
        self._envs = WarmPool(keep=config.warm, scrub=True)
        self._key = (config.env, config.dataset, config.settings)
        self._closed = False
        self.created = 0  # environments built (for tests and benchmarks)

    def check(self) -> None:
        """Build one environment now, so a bad configuration fails at start-up."""
        env = self._borrow()
        self._give_back(env)

    def open(self) -> Session:
        """A new session, or :class:`Busy` when ``max_sessions`` are live."""
        with self._lock:
            if self._closed:
                raise ServeError("the server is shutting down")
            if len(self._sessions) >= self.config.max_sessions:
                raise Busy(f"all {self.config.max_sessions} sessions are in use; try again "
                           "later")
            sid = secrets.token_hex(16)
            session = Session(self, sid)
            self._sessions[sid] = session
            return session

    def get(self, sid: str) -> Session:
        """A live session by id."""
        with self._lock:
            session = self._sessions.get(sid)
        if session is None:
            raise UnknownSession("no such session (it ended or expired)")
        return session

    def live(self) -> int:
        """Sessions open now."""
        with self._lock:
            return len(self._sessions)

    def idle_envs(self) -> int:
        """Warm environments waiting for a session."""
        return self._envs.idle()

    def reap(self) -> int:
        """Close the sessions idle for longer than ``idle_timeout``; how many."""
        now = time.monotonic()
        with self._lock:
            stale = [s for s in self._sessions.values()
                     if now - s.last_used > self.config.idle_timeout and not s.lock.locked()]
        for session in stale:
            session.close()
        return len(stale)

    def shutdown(self) -> None:
        """Close every session and environment."""
        with self._lock:
            self._closed = True
            sessions = list(self._sessions.values())
        self._envs.shutdown()  # the sessions' environments are closed, not kept
        for session in sessions:
            session.close()

    # -- environments --------------------------------------------------------------------

    def _borrow(self) -> IntercodeEnv:
        return self._envs.borrow(self._key, self._build)

    def _build(self) -> IntercodeEnv:
        try:
            env = self._factory()
            env.warm_up()
        except IntercodeError:
            raise
        except Exception as exc:
            raise InfrastructureError(f"cannot start an environment: {exc}") from exc
        with self._lock:
            self.created += 1
        return env

    def _give_back(self, env: IntercodeEnv) -> None:
        self._envs.give_back(self._key, env)

    def _discard(self, env: IntercodeEnv) -> None:
        discard(env)

    def _release(self, session: Session, env: IntercodeEnv | None) -> None:
        with self._lock:
            self._sessions.pop(session.id, None)
        if env is not None:
            self._give_back(env)
