"""The model client against a local server that speaks the Chat Completions protocol.

The real ``openai`` SDK makes real HTTP requests; the server plays errors, slow and
malformed answers. Backoff sleeps are recorded instead of slept.
"""

from __future__ import annotations

import pytest

from intercode.errors import ConfigError, FatalRunError, ModelError, ModelRejected
from intercode.llm.client import ChatClient, ModelConfig, parse_extra_body
from intercode.llm.scripted_server import Reply, ScriptedChatServer, call, refusing, sequence

HELLO = [{"role": "user", "content": "hello"}]


def client(server, sleeps=None, **kw):
    cfg = ModelConfig("scripted-model", base_url=server.url, **{"timeout": 5, **kw})
    return ChatClient(cfg, sleep=(sleeps.append if sleeps is not None else lambda s: None))


def test_an_answer_with_tokens_latency_and_the_request_as_sent(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with ScriptedChatServer(sequence(["```bash\nls\n```"]), api_key="sk-test") as server:
        got = client(server, temperature=0.3, max_tokens=77).complete(HELLO, stop=["\nObs"])
        request = server.requests[0]
    assert got.text == "```bash\nls\n```" and got.attempts == 1
    assert got.prompt_tokens == 1 and got.completion_tokens == 3 and got.latency_s > 0
    assert request["model"] == "scripted-model" and request["messages"] == HELLO
    assert request["temperature"] == 0.3 and request["max_tokens"] == 77
    assert request["stop"] == ["\nObs"] and request["authorization"] == "Bearer sk-test"


def test_transient_failures_are_retried_with_backoff_and_retry_after():
    replies = [Reply(status=429, headers={"Retry-After": "7"}), Reply(status=500),
               Reply(status=503), Reply(raw=b"<html>bad gateway</html>"),
               Reply(raw=b'{"choices": []}'), Reply(drop=True), Reply("done")]
    sleeps: list[float] = []
    with ScriptedChatServer(sequence(replies)) as server:
        got = client(server, sleeps, backoff=1.0, retries=6).complete(HELLO)
    assert got.text == "done" and got.attempts == 7
    assert len(sleeps) == 6
    assert sleeps[0] >= 7  # Retry-After is honoured
    assert all(0.5 * min(60, 2 ** i) <= s <= min(60, 2 ** i) for i, s in list(enumerate(sleeps))[1:])


def test_failures_beyond_the_retries_are_a_model_error_not_an_answer():
    sleeps: list[float] = []
    with ScriptedChatServer(sequence([Reply(status=500)])) as server:
        with pytest.raises(ModelError, match=r"failed 3 times.*InternalServerError 500"):
            client(server, sleeps, retries=2).complete(HELLO)
        assert len(server.requests) == 3


def test_a_slow_server_times_out_and_is_retried():
    with ScriptedChatServer(sequence([Reply("late", delay=2.0), Reply("on time")])) as server:
        got = client(server, timeout=0.5, retries=1).complete(HELLO)
    assert got.text == "on time" and got.attempts == 2


@pytest.mark.parametrize(("status", "pattern"), [(401, "refused the credentials"),
                                                 (403, "no permission"),
                                                 (404, "has no model")])
def test_credentials_and_unknown_models_stop_the_run(status, pattern):
    with ScriptedChatServer(sequence([Reply(status=status)])) as server:
        with pytest.raises(FatalRunError, match=pattern):
            client(server).complete(HELLO)
        assert len(server.requests) == 1  # never retried


def test_a_wrong_key_is_fatal(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-wrong")
    with (ScriptedChatServer(sequence(["x"]), api_key="sk-right") as server,
          pytest.raises(FatalRunError, match="Incorrect API key")):
        client(server).complete(HELLO)


def test_a_rejected_request_is_a_model_error_without_retries():
    body = {"error": {"message": "maximum context length exceeded", "type": "invalid"}}
    with ScriptedChatServer(sequence([Reply(status=400, body=body)])) as server:
        with pytest.raises(ModelError, match="context length"):
            client(server).complete(HELLO)
        assert len(server.requests) == 1


def test_no_key_and_no_endpoint_is_fatal_before_any_call(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(FatalRunError, match="no API key"):
        ChatClient(ModelConfig("gpt-4o-mini"))


def test_an_empty_or_null_content_is_an_empty_reply():
    raw = (b'{"id": "x", "object": "chat.completion", "created": 0, "model": "m", "choices": '
           b'[{"index": 0, "finish_reason": "length", "message": {"role": "assistant", '
           b'"content": null}}]}')
    with ScriptedChatServer(sequence([Reply(raw=raw)])) as server:
        got = client(server).complete(HELLO)
    assert got.text == "" and got.finish_reason == "length" and got.prompt_tokens is None


def test_the_scripted_server_lists_its_model():
    import openai

    with ScriptedChatServer(sequence(["x"]), model="m1") as server:
        models = openai.OpenAI(api_key="k", base_url=server.url).models.list()
    assert [m.id for m in models.data] == ["m1"]


# -- tool calls, reasoning models, streaming, extra body ------------------------------------

TOOLS = [{"type": "function", "function": {"name": "execute", "parameters": {
    "type": "object", "properties": {"code": {"type": "string"}}, "required": ["code"]}}}]


@pytest.mark.parametrize("stream", [False, True])
def test_tool_calls_come_back_in_order_with_their_ids(stream):
    calls = (call("execute", {"code": "ls -la"}, "call_a"),
             call("submit", '{"answer": "x"}', "call_b"))
    with ScriptedChatServer(sequence([Reply("thinking", tool_calls=calls)])) as server:
        got = client(server, stream=stream).complete(HELLO, tools=TOOLS)
        request = server.requests[0]
    assert got.text == "thinking" and got.finish_reason == "tool_calls"
    assert [(c.id, c.name, c.arguments) for c in got.tool_calls] == [
        ("call_a", "execute", '{"code": "ls -la"}'), ("call_b", "submit", '{"answer": "x"}')]
    assert request["tools"] == TOOLS and request.get("stream", False) is stream


def test_a_streamed_reply_is_the_same_as_a_whole_one_and_keeps_its_usage():
    reply = Reply("a longer streamed answer, in pieces", reasoning_tokens=40)
    with ScriptedChatServer(sequence([reply])) as server:
        whole = client(server).complete(HELLO)
        streamed = client(server, stream=True).complete(HELLO)
        sent = server.requests[1]
    assert streamed.text == whole.text == reply.text
    assert streamed.reasoning_tokens == whole.reasoning_tokens == 40
    assert (streamed.prompt_tokens, streamed.completion_tokens) == (
        whole.prompt_tokens, whole.completion_tokens)
    assert sent["stream"] is True and sent["stream_options"] == {"include_usage": True}


@pytest.mark.parametrize("cut", [1, 3])
def test_a_stream_cut_mid_way_is_retried(cut):
    replies = [Reply("never finished, this one", cut_after=cut), Reply("whole")]
    sleeps: list[float] = []
    with ScriptedChatServer(sequence(replies)) as server:
        got = client(server, sleeps, stream=True, retries=2).complete(HELLO)
    assert got.text == "whole" and got.attempts == 2 and len(sleeps) == 1


def test_a_stream_that_ends_without_saying_why_is_retried():
    # a server that closes a stream cleanly before its last chunk (no finish_reason)
    events = (b'data: {"id": "x", "object": "chat.completion.chunk", "created": 0, '
              b'"model": "m", "choices": [{"index": 0, "delta": {"content": "par"}, '
              b'"finish_reason": null}]}\n\ndata: [DONE]\n\n')
    with ScriptedChatServer(sequence([Reply(raw=events), Reply("whole")])) as server:
        got = client(server, stream=True, retries=1).complete(HELLO)
    assert got.text == "whole" and got.attempts == 2
    with (ScriptedChatServer(sequence([Reply(raw=events)])) as server,
          pytest.raises(ModelError, match="no finish_reason")):
        client(server, stream=True, retries=0).complete(HELLO)


def test_a_stalled_stream_times_out_and_is_retried():
    replies = [Reply("slow to go on", stall=2.0), Reply("quick")]
    with ScriptedChatServer(sequence(replies)) as server:
        got = client(server, stream=True, timeout=0.5, retries=1).complete(HELLO)
    assert got.text == "quick" and got.attempts == 2


@pytest.mark.parametrize("with_param", [True, False])
def test_refused_max_tokens_and_temperature_are_adapted_once_and_remembered(with_param):
    server = ScriptedChatServer(refusing(sequence(["ok"]), with_param=with_param))
    with server:
        c = client(server, max_tokens=99, retries=0)
        first = c.complete(HELLO, stop=["\nObs"])
        second = c.complete(HELLO)
        sent = server.requests
    assert first.text == second.text == "ok"
    # one refusal per parameter, then every request in the accepted form
    assert len(sent) == 4
    assert "max_tokens" in sent[0] and "temperature" in sent[1]
    final = sent[2]
    assert "max_tokens" not in final and final["max_completion_tokens"] == 99
    assert "temperature" not in final and final["stop"] == ["\nObs"]
    assert sent[3].keys() == final.keys() - {"stop"}
    assert set(first.adjusted) == {"max_tokens sent as max_completion_tokens",
                                   "temperature not sent"}


@pytest.mark.parametrize("model", ["o3-mini", "o1", "gpt-5", "openai/o4-mini", "gpt-5.1-codex"])
def test_known_reasoning_families_get_the_accepted_form_up_front(model):
    with ScriptedChatServer(refusing(sequence(["ok"]), ("max_tokens", "temperature",
                                                        "top_p"))) as server:
        cfg = ModelConfig(model, base_url=server.url, max_tokens=64, top_p=0.9,
                          reasoning_effort="high")
        got = ChatClient(cfg).complete(HELLO)
        sent = server.requests
    assert got.text == "ok" and len(sent) == 1
    assert sent[0]["max_completion_tokens"] == 64 and sent[0]["reasoning_effort"] == "high"
    assert not {"max_tokens", "temperature", "top_p"} & sent[0].keys()


@pytest.mark.parametrize("model", ["gpt-4o-mini", "llama3.1:8b", "Qwen/Qwen2.5-7B",
                                   "ollama/o3x-custom"])
def test_other_models_get_max_tokens_and_temperature(model):
    with ScriptedChatServer(sequence(["ok"])) as server:
        ChatClient(ModelConfig(model, base_url=server.url)).complete(HELLO)
        sent = server.requests[0]
    assert sent["max_tokens"] == 512 and sent["temperature"] == 0.0


def test_a_400_about_something_else_is_still_a_rejection():
    body = {"error": {"message": "This model's maximum context length is 8192 tokens; "
                      "max_tokens plus the messages is more", "type": "invalid_request_error",
                      "param": "messages", "code": "context_length_exceeded"}}
    with ScriptedChatServer(sequence([Reply(status=400, body=body)])) as server:
        with pytest.raises(ModelRejected, match="context length"):
            client(server).complete(HELLO)
        assert len(server.requests) == 1


def test_a_server_refusing_every_form_is_rejected_after_a_bounded_number_of_tries():
    body = {"error": {"message": "Unsupported parameter", "param": None}}

    def respond(request):
        for name in ("max_tokens", "max_completion_tokens", "temperature"):
            if name in request:
                return Reply(status=400, body={"error": {**body["error"], "param": name}})
        return Reply(status=400, body=body)

    with ScriptedChatServer(respond) as server:
        with pytest.raises(ModelRejected):
            client(server, retries=3).complete(HELLO)
        assert len(server.requests) <= 4


def test_extra_body_is_merged_into_every_request():
    with ScriptedChatServer(sequence(["ok"])) as server:
        client(server, extra_body={"top_k": 20, "chat_template_kwargs": {"x": True}},
               stream=True).complete(HELLO)
        sent = server.requests[0]
    assert sent["top_k"] == 20 and sent["chat_template_kwargs"] == {"x": True}


@pytest.mark.parametrize(("text", "pattern"), [("{bad", "not valid JSON"),
                                               ("[1, 2]", "must be a JSON object"),
                                               ('"x"', "must be a JSON object")])
def test_malformed_extra_body_is_one_line(text, pattern):
    with pytest.raises(ConfigError, match=pattern) as err:
        parse_extra_body(text)
    assert "\n" not in str(err.value)


def test_extra_body_may_not_replace_what_the_client_sends():
    with pytest.raises(ConfigError, match="may not set messages, model"):
        ModelConfig("m", extra_body={"model": "other", "messages": []})
    with pytest.raises(ConfigError, match="reasoning effort"):
        ModelConfig("m", reasoning_effort="extreme")


def test_identity_keeps_old_runs_resumable_and_new_settings_apart():
    assert ModelConfig("m").identity() == {"model": "m", "temperature": 0.0,
                                           "max_tokens": 512, "top_p": None}
    assert ModelConfig("m", reasoning_effort="low").identity()["reasoning_effort"] == "low"
    assert ModelConfig("m", extra_body={"a": 1}).identity()["extra_body"] == {"a": 1}


def test_a_value_out_of_range_is_not_taken_for_an_unsupported_parameter():
    # OpenAI names the parameter, but the model takes it: leaving it out would lift the cap
    body = {"error": {"message": "max_tokens is too large: 100000. This model supports at "
                      "most 16384 completion tokens, whereas you provided 100000.",
                      "type": "invalid_request_error", "param": "max_tokens",
                      "code": "invalid_value"}}
    with ScriptedChatServer(sequence([Reply(status=400, body=body)])) as server:
        c = client(server)
        with pytest.raises(ModelRejected, match="too large"):
            c.complete(HELLO)
        assert len(server.requests) == 1 and not c.refused


def free_port() -> int:
    """A port nothing listens on."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class FakeClock:
    """Time that passes only in the client's backoff sleeps (recorded)."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds

    def __call__(self) -> float:
        return self.now


def test_an_unreachable_server_stops_the_run_and_says_why():
    """The SDK says only "Connection error."; the error names its cause."""
    client = ChatClient(ModelConfig("m", base_url=f"http://127.0.0.1:{free_port()}/v1",
                                    retries=0, connect_wait=0))
    with pytest.raises(FatalRunError, match=r"cannot reach the model server at "
                       r"http://127\.0\.0\.1:\d+/v1 \(1 attempt over 0 s, --llm-connect-wait "
                       r"0\): APIConnectionError: Connection error\. \(ConnectError: .*refused"):
        client.complete([{"role": "user", "content": "hi"}])


def test_an_endpoint_that_never_answered_is_tried_for_the_connect_wait_then_stops_the_run():
    """Not bounded by the retries (a server still loading may take minutes), but by the
    wait: the usual backoff, the last sleep cut to what is left of it."""
    clock = FakeClock()
    cfg = ModelConfig("m", base_url=f"http://127.0.0.1:{free_port()}/v1", retries=1,
                      backoff=1.0, backoff_max=4.0, connect_wait=20.0)
    client = ChatClient(cfg, sleep=clock.sleep, clock=clock)
    with pytest.raises(FatalRunError, match=r"cannot reach .* over 20 s, --llm-connect-wait 20\)"
                       r".*refused") as caught:
        client.complete(HELLO)
    assert sum(clock.sleeps) == pytest.approx(20.0)
    assert len(clock.sleeps) > cfg.retries + 1 and max(clock.sleeps) <= 4.0
    tries = len(clock.sleeps) + 1
    assert f"({tries} attempts over" in str(caught.value)
    assert not client.reached


def test_an_endpoint_that_answered_and_then_died_errs_the_call_only():
    """A server can restart: after its first answer, a refused connection is retried
    like any failure and ends as a model error (the episode's), not the run."""
    clock = FakeClock()
    with ScriptedChatServer(sequence(["first"])) as server:
        cfg = ModelConfig("scripted-model", base_url=server.url, timeout=5, retries=2,
                          connect_wait=0)
        client = ChatClient(cfg, sleep=clock.sleep, clock=clock)
        assert client.complete(HELLO).text == "first" and client.reached
    with pytest.raises(ModelError, match=r"failed 3 times.*ConnectError.*refused"):
        client.complete(HELLO)
    assert len(clock.sleeps) == 2


def test_an_error_status_counts_as_an_answer():
    """A 500 means a server is there: a later refused connection is retried, not fatal."""
    clock = FakeClock()
    with ScriptedChatServer(sequence([Reply(status=500)])) as server:
        client = client_on(server, clock, retries=0, connect_wait=0)
        with pytest.raises(ModelError, match="InternalServerError 500"):
            client.complete(HELLO)
    assert client.reached
    with pytest.raises(ModelError, match=r"failed 1 times.*refused"):
        client.complete(HELLO)


def test_a_connection_cut_before_any_answer_is_an_ordinary_retry():
    """A server that takes the connection and drops it is there: the retries apply."""
    clock = FakeClock()
    with ScriptedChatServer(sequence([Reply(drop=True)])) as server:
        client = client_on(server, clock, retries=2, connect_wait=1000)
        with pytest.raises(ModelError, match="failed 3 times"):
            client.complete(HELLO)
        assert len(server.requests) == 3 and len(clock.sleeps) == 2


def client_on(server, clock, **kw):
    cfg = ModelConfig("scripted-model", base_url=server.url, **{"timeout": 5, **kw})
    return ChatClient(cfg, sleep=clock.sleep, clock=clock)


@pytest.mark.parametrize("wait", [-1.0, float("nan"), float("inf"), 1e9])
def test_a_bad_connect_wait_is_one_line(wait):
    with pytest.raises(ConfigError, match=r"^the connect wait must be from 0 to 86400 seconds"):
        ModelConfig("m", connect_wait=wait)


def fake_openai(transport: str):
    """An ``openai`` module whose client class runs on the HTTP library ``transport``."""
    import types

    library = types.ModuleType(transport)
    library.HTTPError = type("HTTPError", (Exception,), {})
    client = type("Client", (), {"__module__": f"{transport}._client"})
    sdk = types.ModuleType("openai")
    sdk.DefaultHttpxClient = type("DefaultHttpxClient", (client,), {"__module__": "openai"})
    return sdk, library


@pytest.mark.parametrize("transport", ["httpx2", "httpx"])
def test_the_transport_errors_are_those_of_the_library_the_sdk_runs_on(monkeypatch, transport):
    """openai 3.x runs on httpx2, 1.x and 2.x on httpx: the other one need not be installed."""
    import sys

    from intercode.llm.client import transport_errors

    sdk, library = fake_openai(transport)
    other = "httpx" if transport == "httpx2" else "httpx2"
    monkeypatch.setitem(sys.modules, transport, library)
    monkeypatch.setitem(sys.modules, other, None)  # not installed: importing it fails
    assert transport_errors(sdk) == (library.HTTPError,)


def test_an_http_library_error_out_of_a_stream_is_retried(monkeypatch):
    """openai 1.x and 2.x let a connection cut mid-stream through as their HTTP library's
    error; the installed SDK's library is the one caught."""
    import openai

    from intercode.llm.client import transport_errors

    (error,) = transport_errors(openai)
    with ScriptedChatServer(sequence(["whole"])) as server:
        c = client(server, stream=True, retries=1)
        real = c._call
        calls = []

        def cut_once(request):
            calls.append(request)
            if len(calls) == 1:
                raise error("peer closed connection without sending complete message body")
            return real(request)

        monkeypatch.setattr(c, "_call", cut_once)
        got = c.complete(HELLO)
    assert got.text == "whole" and got.attempts == 2
