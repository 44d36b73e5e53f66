"""The OpenEnv side of intercode: its action, observation and state, and the client.

``intercode serve openenv --env bash --port 8000`` serves an environment over the
OpenEnv protocol (``openenv`` 0.4 to 0.10); :class:`IntercodeEnvClient` is its client, an
OpenEnv ``EnvClient``, so OpenEnv's and TRL's machinery drive it like any OpenEnv
environment. Its calls are awaited in async code and plain calls in blocking code, as
OpenEnv's documents show, or go through ``.sync()``::

    from intercode.integrations.serve.openenv import IntercodeAction, IntercodeEnvClient

    with IntercodeEnvClient(base_url="http://127.0.0.1:8000").sync() as env:
        result = env.reset(task=3)             # or reset(seed=7): a seeded random task
        print(result.observation.query)
        result = env.step(IntercodeAction(code="ls -a"))   # or env.step("ls -a")
        print(result.observation.output, result.observation.exit_code)
        result = env.step("submit")
        print(result.reward, result.done)      # the task's reward; the episode ended

OpenEnv's generic ``MCPToolClient`` works too: the server lists the tools ``execute``,
``evaluate`` and ``submit`` and runs them as steps (docs/serving.md, "OpenEnv").

Each WebSocket connection is one session on the server: its own sandboxes, one episode
at a time. ``submit`` (``submit <flag>`` for CTF, ``submit <function>`` for Python)
scores and ends the episode, ``skip`` ends it with 0, as in the Gymnasium API; other
steps have reward 0.0 unless the step asks for the Try Again score
(``IntercodeAction(code=..., evaluate=True)``, or ``reset(evaluate=True)`` for every
step of the episode). docs/serving.md, "OpenEnv", says how each convention maps.

Errors the server sends are raised as :class:`ServerError` (a ``RuntimeError``, as
OpenEnv's client raises, and a :class:`~intercode.integrations.serve.sessions.ServeError`), whose
``code`` says which kind: ``busy``, ``no_episode``, ``unknown_session``,
``infrastructure``, ``bad_request``, ``unauthorized``.
"""

from __future__ import annotations

import inspect
import json
import re
from typing import Any
from urllib.parse import urlsplit

from pydantic import Field

from intercode.integrations.serve._openenv_core import (
    Action,
    EnvClient,
    Observation,
    State,
    StepResult,
    WSErrorCode,
)
from intercode.integrations.serve.sessions import MAX_CODE_CHARS, ServeError

__all__ = ["IntercodeAction", "IntercodeEnvClient", "IntercodeObservation", "IntercodeState",
           "ServerError"]

# the codes of intercode.integrations.serve.sessions, and the client's own
CODES = ("busy", "unknown_session", "no_episode", "infrastructure", "bad_request",
         "unauthorized")
CLOSE_WAIT = 2.0  # seconds to wait for the close handshake of a session the server ended
_CODED = re.compile(rf"^({'|'.join(CODES)}): (.*)$", re.DOTALL)


class IntercodeAction(Action):
    """One action: a command (Bash, CTF), a query (SQL), code (Python), or ``submit``."""

    code: str = Field(..., min_length=1, max_length=MAX_CODE_CHARS,
                      description="the action: code to run; 'submit' (or 'submit <answer>') "
                                  "scores and ends the episode, 'skip' ends it with 0")
    evaluate: bool | None = Field(
        default=None,
        description="make this step's reward the Try Again score of the state after it "
                    "(default: what reset(evaluate=...) chose, else no: reward 0.0)")


class IntercodeObservation(Observation):
    """What a step shows: its output, the task's query, and what the step reported.

    ``reward`` and ``done`` are the protocol's. OpenEnv 0.3 sends an observation
    without its ``metadata`` (``serialize_observation`` leaves it out), so the reported
    values travel as fields (``task``, ``exit_code``, ``timed_out``, ``info``) and
    :class:`IntercodeEnvClient` copies them into ``metadata`` as well.
    """

    output: str = Field(default="", description="the action's output ('' at reset)")
    query: str = Field(default="", description="the task's query (in every observation)")
    task: int | None = Field(default=None, description="the task's index in the dataset")
    exit_code: int | None = Field(default=None, description="the action's exit status")
    timed_out: bool = Field(default=False, description="the action hit the time limit")
    info: dict[str, Any] = Field(
        default_factory=dict,
        description="what else the step reported: dataset, turn, submitted, skipped, "
                    "success, evaluated, parts (the reward's parts)")


class IntercodeState(State):
    """The session's state: ``episode_id``, ``step_count`` and the episode's task."""

    env: str = Field(default="", description="the environment (bash, sql, python, ctf)")
    dataset: str = Field(default="", description="the dataset served")
    reward: str = Field(default="paper", description="the reward mode the server scores "
                                                     "with (paper, success, baseline)")
    task: int | None = Field(default=None, description="the episode's task (None: no "
                                                       "episode yet)")
    done: bool = Field(default=True, description="no episode running")


class ServerError(ServeError, RuntimeError):
    """An error the server answered (``code`` says which kind), or a refused handshake."""

    def __init__(self, code: str, message: str, protocol_code: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.protocol_code = protocol_code


def server_error(data: dict[str, Any]) -> ServerError:
    """The :class:`ServerError` of an OpenEnv error message's ``data``."""
    message = str(data.get("message", "unknown error"))
    protocol = str(data.get("code", ""))
    coded = _CODED.match(message)
    if coded:
        return ServerError(coded.group(1), coded.group(2), protocol)
    if protocol == WSErrorCode.CAPACITY_REACHED.value:
        return ServerError("busy", message, protocol)
    if protocol == WSErrorCode.FACTORY_ERROR.value:
        return ServerError("infrastructure", message, protocol)
    if protocol == WSErrorCode.VALIDATION_ERROR.value and data.get("errors"):
        problems = "; ".join(f"{'.'.join(str(p) for p in e.get('loc', ()))}: {e.get('msg')}"
                             for e in data["errors"] if isinstance(e, dict))
        return ServerError("bad_request", f"{message}: {problems}", protocol)
    return ServerError("bad_request", message, protocol)


def _detail(body: bytes | bytearray | None) -> dict[str, Any]:
    """The ``data`` of an error from an HTTP refusal's JSON body."""
    try:
        data = json.loads(body or b"{}")
    except ValueError:
        data = {}
    if not isinstance(data, dict):
        data = {}
    return {"message": str(data.get("detail", "the server refused the connection"))}


def observation_of(payload: dict[str, Any]) -> IntercodeObservation:
    """The observation of a reset/step answer (``metadata`` rebuilt from the fields)."""
    data = payload.get("observation") or {}
    known = {k: v for k, v in data.items() if k in IntercodeObservation.model_fields
             and k not in ("reward", "done", "metadata")}
    info = known.get("info")
    metadata = {"task": known.get("task"), "exit_code": known.get("exit_code"),
                "timed_out": known.get("timed_out", False),
                **(info if isinstance(info, dict) else {})}
    return IntercodeObservation(**known, reward=payload.get("reward"),
                                done=bool(payload.get("done", False)), metadata=metadata)


class IntercodeEnvClient(EnvClient[IntercodeAction, IntercodeObservation, IntercodeState]):
    """The client of ``intercode serve openenv``: one server session per instance.

    ``base_url`` is the server's (``http://host:port`` or ``ws://...``); ``token`` the
    bearer token if the server was started with ``--token-env`` (sent on every
    connection, also by the sessions :meth:`new_session` opens; a ``headers`` dict with
    an ``Authorization`` entry does the same). Other keyword arguments are
    :class:`openenv.core.EnvClient`'s (``message_timeout_s``, the seconds to wait for an
    answer, should exceed the server's ``--timeout``).

    Every call works the ways OpenEnv's clients do: awaited in async code
    (``await env.reset(task=3)``), called directly in blocking code
    (``env.reset(task=3).observation``), or through ``.sync()``. A step takes an
    :class:`IntercodeAction` or its code as a plain string. After the server ended the
    session (idle expiry, a restart), the next call connects again by itself: the new
    session has no episode until ``reset``.
    """

    _ws: Any  # the connection (EnvClient's)

    def __init__(self, base_url: str, *, token: str | None = None,
                 headers: dict[str, str] | None = None, **kwargs: Any) -> None:
        sent = dict(headers or {})
        if token:
            sent["Authorization"] = f"Bearer {token}"
        if _TAKES_HEADERS:  # so that OpenEnv's new_session() passes them on
            kwargs["headers"] = sent or None
        super().__init__(base_url, **kwargs)
        self._sent_headers = sent

    def _create_session_client(self) -> IntercodeEnvClient:
        """The client of another session on the same server (OpenEnv's ``new_session``),
        with this one's headers (the token)."""
        client: IntercodeEnvClient = super()._create_session_client()
        client._sent_headers = dict(self._sent_headers)
        return client

    async def _connect_async(self) -> IntercodeEnvClient:
        """Open the WebSocket session (with the token, if any); a connection the server
        closed is replaced."""
        from websockets.asyncio.client import connect
        from websockets.exceptions import InvalidStatus
        from websockets.protocol import State as Connection

        if self._ws is not None:
            if self._ws.state not in (Connection.CLOSING, Connection.CLOSED):
                return self
            self._ws = None
        host = (urlsplit(self._ws_url).hostname or "").lower()
        loopback = host in ("localhost", "127.0.0.1", "::1")
        try:
            self._ws = await connect(self._ws_url, open_timeout=self._connect_timeout,
                                     max_size=self._max_message_size,
                                     additional_headers=self._sent_headers or None,
                                     proxy=None if loopback else True)
        except InvalidStatus as exc:
            status = exc.response.status_code
            if status == 401:
                raise ServerError("unauthorized", f"the server at {self._ws_url} refused "
                                  "the connection: a wrong or missing bearer token") from None
            if status == 503:
                raise server_error(_detail(exc.response.body)) from None
            if status in (403, 421):  # a Host or Origin the server does not answer
                raise ConnectionError(f"cannot connect to {self._ws_url}: HTTP {status}: "
                                      f"{_detail(exc.response.body)['message']}") from None
            raise ConnectionError(f"cannot connect to {self._ws_url}: HTTP {status}") from exc
        except Exception as exc:
            raise ConnectionError(f"cannot connect to {self._ws_url}: {exc}") from exc
        if hasattr(self, "_ws_loop"):  # openenv 0.6 and later track the connection's loop
            import asyncio

            self._ws_loop = asyncio.get_running_loop()
        return self

    async def _reset_async(self, task: int | None = None, seed: int | None = None,
                           evaluate: bool | None = None,
                           **kwargs: Any) -> StepResult[IntercodeObservation]:
        """Start an episode on ``task`` (else a task drawn with ``seed``, or at random).

        ``evaluate=True`` makes every step's reward the Try Again score of the state
        after it. ``episode_id`` names the episode in :meth:`state`.
        """
        data = {k: v for k, v in {"task": task, "seed": seed, "evaluate": evaluate,
                                  **kwargs}.items() if v is not None}
        response = await self._send_and_receive({"type": "reset", "data": data})
        return self._parse_result(response.get("data", {}))

    def evaluate(self) -> Any:
        """The Try Again score of the current state, the episode going on (the server's
        ``evaluate`` tool): a ``StepResult`` whose ``reward`` is the score and whose
        observation's ``info`` holds ``success`` and ``parts``. Awaitable in async code,
        as every call here."""
        return self._dispatch(self._evaluate_async)

    async def _evaluate_async(self) -> StepResult[IntercodeObservation]:
        response = await self._send_and_receive({"type": "step", "data": {
            "type": "call_tool", "tool_name": "evaluate", "arguments": {}}})
        payload = response.get("data") or {}
        data = payload.get("observation") or {}
        error = data.get("error")
        if isinstance(error, dict):
            raise server_error({"message": str(error.get("message", "evaluate failed"))})
        raw = data.get("result")
        result: dict[str, Any] = raw if isinstance(raw, dict) else {}
        reward = float(result.get("reward", 0.0))
        info = {"evaluated": True, "success": bool(result.get("success")),
                "parts": result.get("parts", {})}
        observation = IntercodeObservation(output="", info=info, reward=reward,
                                           done=bool(payload.get("done", False)),
                                           metadata=dict(info))
        return StepResult(observation=observation, reward=reward, done=observation.done)

    async def _send_and_receive(self, message: dict[str, Any]) -> dict[str, Any]:
        from websockets.exceptions import ConnectionClosed

        try:
            await self._send(message)
        except ConnectionClosed:  # what the server said before it closed is still there
            pass                  # (OpenEnv's capacity error), else _receive raises
        try:
            response: dict[str, Any] = await self._receive()
        except ConnectionClosed as exc:
            self._ws = None  # the next call connects again
            raise ServerError("unknown_session", "the server closed the session (it was "
                              "idle too long, or the server restarted); the next call "
                              "connects again: reset to start an episode") from exc
        if response.get("type") == "error":
            error = server_error(response.get("data") or {})
            if error.code == "unknown_session":  # the server ended it: a new one next time
                await self._drop_connection()
            raise error
        return response

    async def _drop_connection(self) -> None:
        import asyncio

        ws, self._ws = self._ws, None
        if ws is not None:
            try:
                await asyncio.wait_for(ws.close(), CLOSE_WAIT)
            except Exception:  # the server is gone or going: nothing to tell
                pass

    def _step_payload(self, action: IntercodeAction | str) -> dict[str, Any]:
        if isinstance(action, str):
            action = IntercodeAction(code=action)
        payload: dict[str, Any] = action.model_dump(exclude_none=True)
        if not payload.get("metadata"):
            payload.pop("metadata", None)
        return payload

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[IntercodeObservation]:
        obs = observation_of(payload)
        return StepResult(observation=obs, reward=obs.reward, done=obs.done)

    def _parse_state(self, payload: dict[str, Any]) -> IntercodeState:
        known = {k: v for k, v in payload.items() if k in IntercodeState.model_fields}
        return IntercodeState(**known)


_TAKES_HEADERS = "headers" in inspect.signature(EnvClient.__init__).parameters
