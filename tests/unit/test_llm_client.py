"""The model client against a local server that speaks the Chat Completions protocol.

The real ``openai`` SDK makes real HTTP requests; the server plays errors, slow and
malformed answers. Backoff sleeps are recorded instead of slept.
"""

from __future__ import annotations

import pytest

from intercode.errors import FatalRunError, ModelError
from intercode.llm.client import ChatClient, ModelConfig
from intercode.llm.scripted_server import Reply, ScriptedChatServer, sequence

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
