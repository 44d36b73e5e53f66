"""A chat-model client: the official ``openai`` SDK against any Chat Completions endpoint.

OpenAI itself, or a local server that speaks the same protocol (vLLM, Ollama,
llama.cpp, LM Studio). Transient failures (429, 5xx, connection errors, time-outs,
malformed answers) are retried with exponential backoff and jitter, honouring
``Retry-After``; bad credentials or an unknown model stop the run
(:class:`~intercode.errors.FatalRunError`) instead of scoring zeros; anything else that
survives the retries is a :class:`~intercode.errors.ModelError` (the episode is an error).

An endpoint that cannot be reached before it has ever answered this client (a wrong
port, a server still loading) is tried again with the same backoff for up to
``connect_wait`` seconds, however many attempts that takes, and then stops the run
(:class:`~intercode.errors.FatalRunError`): every episode would fail the same way. Once
it has answered (any HTTP response), a connection failure is retried like any transient
failure and, past the retries, errs the episode only (a server can restart).

Reasoning models refuse parameters other models take: OpenAI's o-series and GPT-5 want
``max_completion_tokens`` instead of ``max_tokens`` and no ``temperature`` (nor ``top_p``,
``stop``) but the default. For model names of those families the client sends the
accepted form up front; for any other model, a 400 that names one of those parameters
makes the client send the request again without it (or renamed) and remember that for
the rest of the run. What was changed is recorded with each call (``adjusted``).

``stream``: the reply is read as server-sent events (content and tool-call deltas,
assembled by :mod:`intercode.llm.replies`); no event within the timeout is a time-out
and a stream cut mid-way is retried like a dropped connection.
"""

from __future__ import annotations

import importlib
import os
import random
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from intercode.errors import FatalRunError, ModelError, ModelRejected
from intercode.llm.config import REASONING_EFFORTS, ModelConfig, parse_extra_body
from intercode.llm.replies import Malformed, Reply, ToolCall, from_response, from_stream

__all__ = [
    "REASONING_EFFORTS",
    "ChatClient",
    "Completion",
    "Message",
    "ModelConfig",
    "parse_extra_body",
]

Message = dict[str, Any]
NO_KEY = "not-needed"  # what local servers get when no key is set


@dataclass(frozen=True)
class Completion:
    """One answer of the model and what it cost."""

    text: str
    prompt_tokens: int | None
    completion_tokens: int | None
    latency_s: float
    attempts: int
    finish_reason: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    reasoning_tokens: int | None = None
    dropped_calls: int = 0
    adjusted: tuple[str, ...] = ()


class ChatClient:
    """Calls ``chat.completions.create`` with our retry policy (the SDK's own is off)."""

    def __init__(self, config: ModelConfig,
                 sleep: Callable[[float], None] = time.sleep,
                 clock: Callable[[], float] = time.monotonic) -> None:
        import openai

        self.config = config
        self._sleep = sleep
        self._clock = clock
        # whether the endpoint has ever answered (any HTTP response) this client
        self.reached = False
        key = os.environ.get(config.api_key_env)
        custom = config.base_url or os.environ.get("OPENAI_BASE_URL")
        if not key and not custom:
            raise FatalRunError(f"no API key: set ${config.api_key_env}, or point --base-url "
                                "at an OpenAI-compatible server")
        self._openai = openai
        # 429, 5xx, time-outs, broken answers or streams (the HTTP library's own errors
        # too: openai 1.x and 2.x let a stream cut mid-way through unwrapped)
        self._retried: tuple[type[Exception], ...] = (
            openai.APIConnectionError, openai.APIStatusError, openai.APIResponseValidationError,
            Malformed, ValueError, *transport_errors(openai))
        self._client = openai.OpenAI(api_key=key or NO_KEY, base_url=config.base_url,
                                     timeout=config.timeout, max_retries=0)

        # what the server refused, learnt from its 400s (kept for the whole run)
        self.refused: set[str] = set()
        if config.reasoning_family:
            self.refused |= {"max_tokens", "temperature", "top_p"}

    def complete(self, messages: Sequence[Message], stop: Sequence[str] | None = None,
                 tools: Sequence[dict[str, Any]] | None = None) -> Completion:
        """The model's answer to ``messages`` (cut before any of ``stop``), with ``tools``
        offered to it."""
        cfg = self.config
        started = time.perf_counter()
        last: Exception | None = None
        attempt = sent = 0
        # the call's start, then when each attempt found no server (before any answer)
        unreachable = [self._clock()]
        while attempt <= cfg.retries:
            if attempt and sent:
                self._sleep(self._delay(attempt, last))
            sent = 1
            try:
                request = self._request(messages, stop, tools)
                reply = self._call(request)
                return self._completion(reply, attempt + 1, time.perf_counter() - started)
            except self._openai.AuthenticationError as exc:
                raise FatalRunError(f"the model server refused the credentials "
                                    f"({cfg.endpoint()}): {_detail(exc)}") from exc
            except self._openai.PermissionDeniedError as exc:
                raise FatalRunError(f"no permission to use {cfg.model!r} at {cfg.endpoint()}: "
                                    f"{_detail(exc)}") from exc
            except self._openai.NotFoundError as exc:
                raise FatalRunError(f"{cfg.endpoint()} has no model {cfg.model!r} (or is not a "
                                    f"Chat Completions endpoint): {_detail(exc)}") from exc
            except (self._openai.BadRequestError, self._openai.UnprocessableEntityError) as exc:
                refused = _refused_parameter(exc, request)
                if refused is not None and refused not in self.refused:
                    self.refused.add(refused)  # send it again without (not a retry)
                    sent = 0
                    continue
                raise ModelRejected(f"the model server rejected the request: "
                                    f"{_detail(exc)}") from exc
            except self._openai.APIConnectionError as exc:
                if self.reached or not _no_server(exc):
                    last = exc  # a server that answered before may be restarting: retry
                else:
                    self._wait_for_server(exc, unreachable)
                    sent = 0  # waited already; does not spend the retries
                    continue
            except self._retried as exc:
                last = exc  # 429, 5xx, time-outs, broken answers or streams: try again
            except self._openai.OpenAIError as exc:
                last = exc
            attempt += 1
        raise ModelError(f"the model call failed {cfg.retries + 1} times; last error: "
                         f"{_detail(last)}")

    def _wait_for_server(self, error: Exception, unreachable: list[float]) -> None:
        """After an attempt that found no server at all, before it ever answered: sleep
        (the usual backoff, within what is left of ``connect_wait``), or stop the run."""
        cfg = self.config
        unreachable.append(self._clock())
        waited = unreachable[-1] - unreachable[0]
        left = cfg.connect_wait - waited
        tries = len(unreachable) - 1
        if left <= 0:
            raise FatalRunError(
                f"cannot reach the model server at {cfg.endpoint()} ({tries} attempt"
                f"{'s' if tries > 1 else ''} over {waited:.0f} s, --llm-connect-wait "
                f"{cfg.connect_wait:g}): {_detail(error)}") from error
        self._sleep(min(left, self._delay(tries, error)))

    def _call(self, request: dict[str, Any]) -> Reply:
        try:
            response = self._client.chat.completions.create(**request)
        except self._openai.APIStatusError:
            self.reached = True  # it answered, if only with an error status
            raise
        self.reached = True
        if not self.config.stream:
            return from_response(response)
        stream = response
        try:
            return from_stream(stream)
        finally:
            stream.close()

    def _request(self, messages: Sequence[Message], stop: Sequence[str] | None,
                 tools: Sequence[dict[str, Any]] | None) -> dict[str, Any]:
        cfg = self.config
        refused = self.refused
        request: dict[str, Any] = {"model": cfg.model, "messages": list(messages)}
        if "temperature" not in refused:
            request["temperature"] = cfg.temperature
        if "max_tokens" in refused:
            if "max_completion_tokens" not in refused:
                request["max_completion_tokens"] = cfg.max_tokens
        else:
            request["max_tokens"] = cfg.max_tokens
        if stop and "stop" not in refused:
            request["stop"] = list(stop)[:4]
        if cfg.top_p is not None and "top_p" not in refused:
            request["top_p"] = cfg.top_p
        if cfg.reasoning_effort is not None:
            request["reasoning_effort"] = cfg.reasoning_effort
        if tools:
            request["tools"] = list(tools)
        if cfg.stream:
            request["stream"] = True
            if "stream_options" not in refused:
                request["stream_options"] = {"include_usage": True}
        if cfg.extra_body:
            request["extra_body"] = dict(cfg.extra_body)
        return request

    def adjusted(self) -> tuple[str, ...]:
        """How the requests differ from what the settings say (what the server refused)."""
        cfg = self.config
        notes = []
        if "max_tokens" in self.refused:
            notes.append("max_tokens sent as max_completion_tokens"
                         if "max_completion_tokens" not in self.refused
                         else "max_tokens not sent")
        notes += [f"{name} not sent" for name in ("temperature", "top_p", "stop",
                                                  "stream_options")
                  if name in self.refused and (name != "top_p" or cfg.top_p is not None)]
        return tuple(notes)

    def _completion(self, reply: Reply, attempts: int, latency: float) -> Completion:
        return Completion(text=reply.text, prompt_tokens=reply.prompt_tokens,
                          completion_tokens=reply.completion_tokens, latency_s=latency,
                          attempts=attempts, finish_reason=reply.finish_reason,
                          tool_calls=reply.tool_calls, reasoning_tokens=reply.reasoning_tokens,
                          dropped_calls=reply.dropped_calls, adjusted=self.adjusted())

    def _delay(self, attempt: int, error: Exception | None) -> float:
        cfg = self.config
        wait: float = (min(cfg.backoff_max, cfg.backoff * 2 ** (attempt - 1))
                       * (0.5 + random.random() / 2))
        retry_after = _retry_after(error)
        if retry_after is not None:
            wait = max(wait, min(retry_after, cfg.backoff_max))
        return wait


def transport_errors(openai: ModuleType) -> tuple[type[Exception], ...]:
    """The base error of the HTTP library the installed ``openai`` SDK runs on: httpx2's
    for openai 3.x, httpx's for 1.x and 2.x (whose streams let a connection cut mid-way
    through unwrapped). Found from the SDK's own client class, so the other library
    need not be installed; empty if neither is."""
    client = getattr(openai, "DefaultHttpxClient", None)
    packages = [cls.__module__.partition(".")[0] for cls in getattr(client, "__mro__", ())]
    for package in [*packages, "httpx2", "httpx"]:
        if package in ("openai", "builtins"):
            continue
        try:
            module = importlib.import_module(package)
        except ImportError:
            continue
        error = getattr(module, "HTTPError", None)
        if isinstance(error, type) and issubclass(error, Exception):
            return (error,)
    return ()


# parameters a server may refuse, and what the client does instead
ADAPTABLE = ("max_tokens", "max_completion_tokens", "temperature", "top_p", "stop",
             "stream_options")
REFUSAL_WORDS = re.compile(r"\b(unsupported|not supported|does not support|unrecognized|"
                           r"unknown|not allowed|not permitted|extra inputs)\b", re.I)


def _refused_parameter(error: Exception, request: dict[str, Any]) -> str | None:
    """The parameter of ``request`` a 400 says the server does not take, if it is one we
    can leave out or rename. The message must say it is unsupported (a value out of
    range, "max_tokens is too large", is not: the request stays refused); OpenAI names
    the parameter in ``param``, other servers only in the message."""
    body = getattr(error, "body", None)
    error_body = body.get("error", body) if isinstance(body, dict) else None
    fields = error_body if isinstance(error_body, dict) else {}
    message = fields.get("message")
    text = message if isinstance(message, str) else str(error)
    if not REFUSAL_WORDS.search(text):
        return None
    sent = [name for name in ADAPTABLE if name in request]
    param = fields.get("param")
    if isinstance(param, str) and param:
        return param if param in sent else None
    named = [name for name in sent if re.search(rf"(?<![A-Za-z_]){name}(?![A-Za-z_])", text)]
    # "use 'max_completion_tokens' instead" names both: the one to leave out comes first
    named.sort(key=lambda name: text.find(name))
    return named[0] if named else None


def _no_server(error: Exception) -> bool:
    """Whether a connection error is that no connection could be made at all (refused,
    unknown host, no route, no handshake within the time-out), as opposed to one cut or
    timed out once made. The SDK wraps the HTTP library's (httpx's or httpx2's)
    ``ConnectError`` or ``ConnectTimeout``."""
    cause = error.__cause__
    return cause is not None and any(cls.__name__ in ("ConnectError", "ConnectTimeout")
                                     for cls in type(cause).__mro__)


def _retry_after(error: Exception | None) -> float | None:
    response = getattr(error, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    try:
        return max(0.0, float(headers.get("retry-after")))
    except (TypeError, ValueError):
        return None


def _detail(error: Exception | None) -> str:
    if error is None:
        return "unknown"
    status = getattr(error, "status_code", None)
    text = str(error).strip() or type(error).__name__
    cause = error.__cause__
    if cause is not None and str(cause) not in text:  # "Connection error." says not which
        text = f"{text} ({type(cause).__name__}: {str(cause).strip() or 'no detail'})"
    text = text if len(text) < 400 else text[:400] + "..."
    return f"{type(error).__name__}{f' {status}' if status else ''}: {text}"
