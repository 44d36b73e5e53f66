"""The OpenEnv side of intercode: its action, observation and state, and the client.

``intercode serve openenv --env bash --port 8000`` serves an environment over the
OpenEnv protocol (openenv-core 0.3); :class:`IntercodeEnvClient` is its client, an OpenEnv
``EnvClient`` (async; ``.sync()`` for the blocking wrapper), so OpenEnv's and TRL's
machinery drive it like any OpenEnv environment::

    from intercode.integrations.serve.openenv import IntercodeAction, IntercodeEnvClient

    with IntercodeEnvClient(base_url="http://127.0.0.1:8000").sync() as env:
        result = env.reset(task=3)             # or reset(seed=7): a seeded random task
        print(result.observation.query)
        result = env.step(IntercodeAction(code="ls -a"))
        print(result.observation.output, result.observation.exit_code)
        result = env.step(IntercodeAction(code="submit"))
        print(result.reward, result.done)      # the task's reward; the episode ended

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
    bearer token if the server was started with ``--token-env``. Other keyword
    arguments are :class:`openenv.core.EnvClient`'s (``message_timeout_s``, the seconds
    to wait for an answer, should exceed the server's ``--timeout``).
    """

    _ws: Any  # the connection (EnvClient's)

    def __init__(self, base_url: str, *, token: str | None = None, **kwargs: Any) -> None:
        super().__init__(base_url, **kwargs)
        self._token = token

    async def connect(self) -> IntercodeEnvClient:
        """Open the WebSocket session (with the token, if any)."""
        if self._ws is not None:
            return self
        from websockets.asyncio.client import connect
        from websockets.exceptions import InvalidStatus

        headers = {"Authorization": f"Bearer {self._token}"} if self._token else None
        host = (urlsplit(self._ws_url).hostname or "").lower()
        loopback = host in ("localhost", "127.0.0.1", "::1")
        try:
            self._ws = await connect(self._ws_url, open_timeout=self._connect_timeout,
                                     max_size=self._max_message_size,
                                     additional_headers=headers,
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
        return self

    async def reset(self, task: int | None = None, seed: int | None = None,
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

    async def step(self, action: IntercodeAction | str,
                   **kwargs: Any) -> StepResult[IntercodeObservation]:
        """Run one action (an :class:`IntercodeAction`, or its code as a string)."""
        if isinstance(action, str):
            action = IntercodeAction(code=action)
        response = await self._send_and_receive({"type": "step",
                                                 "data": self._step_payload(action)})
        return self._parse_result(response.get("data", {}))

    async def _send_and_receive(self, message: dict[str, Any]) -> dict[str, Any]:
        from websockets.exceptions import ConnectionClosed

        try:
            await self._send(message)
        except ConnectionClosed:  # what the server said before it closed is still there
            pass                  # (OpenEnv's capacity error), else _receive raises
        response: dict[str, Any] = await self._receive()
        if response.get("type") == "error":
            raise server_error(response.get("data") or {})
        return response

    def _step_payload(self, action: IntercodeAction) -> dict[str, Any]:
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
