"""``intercode.make`` and the environments' constructors refuse a wrong argument at
construction, in one line that says what to pass, instead of failing inside the first
``reset`` (``sandbox="docker"`` used to die there with "'str' object is not callable")."""

from __future__ import annotations

import pytest

import intercode
from intercode.errors import ConfigError
from intercode.sandbox.limits import Limits
from intercode.sql.backend import SqlLimits

MISUSES = [
    ("bash", {"sandbox": "docker"}, r"sandbox= takes a factory .* pass backend='docker'"),
    ("bash", {"sandbox": 3}, r"sandbox must be a callable"),
    ("bash", {"limits": {"timeout": 5}}, r"limits must be a Limits .* not dict"),
    ("bash", {"limits": SqlLimits()}, r"limits must be a Limits .* not SqlLimits"),
    ("bash", {"layout": "x"}, r"layout must be a Layout"),
    ("bash", {"backend": "podman"}, r"unknown sandbox backend 'podman'"),
    ("bash", {"dataset": 5}, r"dataset must be a dataset's name or an intercode Dataset"),
    ("bash", {"dataset": "nope"}, r"unknown dataset 'nope'"),
    ("bash", {"upstream_quirks": "yes"}, r"upstream_quirks must be True or False"),
    ("bash", {"gold_cache": "no"}, r"gold_cache must be True or False"),
    ("bash", {"max_turns": "5"}, r"max_turns must be a whole number >= 1"),
    ("bash", {"max_turns": -1}, r"max_turns must be a whole number >= 1"),
    ("bash", {"max_turns": True}, r"max_turns must be a whole number >= 1"),
    ("bash", {"timeout": 5}, r"the bash environment takes no keyword timeout; it takes "
                             r"answer_check, backend"),
    ("nope", {}, r"unknown environment 'nope'"),
    ("sql", {"limits": Limits()}, r"limits must be a SqlLimits .* not Limits"),
    ("sql", {"mysql_url": 5}, r"mysql_url must be a str"),
    ("sql", {"sandbox": "docker"}, r"no keyword sandbox \(the sandbox backend is chosen with "
                                   r"sandbox_backend='docker'\)"),
    ("python", {"limits": "x"}, r"limits must be a Limits"),
    ("python", {"upstream_quirks": 1}, r"upstream_quirks must be True or False"),
    ("ctf", {"max_submissions": "3"}, r"max_submissions must be a whole number >= 1"),
    ("ctf", {"max_submissions": 0}, r"max_submissions must be a whole number >= 1"),
    ("ctf", {"layout": 5}, r"layout must be a Layout"),
    ("ctf", {"sandbox": "docker"}, r"chosen with backend='docker'"),
]


@pytest.mark.parametrize(("name", "kwargs", "message"), MISUSES,
                         ids=[f"{n}-{'-'.join(k)}" for n, k, _ in MISUSES])
def test_a_wrong_argument_is_a_one_line_error_at_construction(name, kwargs, message):
    with pytest.raises(ConfigError, match=message) as caught:
        intercode.make(name, **kwargs)
    assert "\n" not in str(caught.value)


def test_a_factory_and_gymnasium_s_own_keywords_are_still_taken():
    from intercode.sandbox import create_sandbox

    made = []

    def factory(limits):
        made.append(limits)
        return create_sandbox("bwrap", limits)

    env = intercode.make("bash", dataset="bash-demo", sandbox=factory, max_turns=3,
                         disable_env_checker=True, limits=Limits(timeout=5))
    try:
        assert env.unwrapped._factory is factory and env.unwrapped.limits.timeout == 5
    finally:
        env.close()
    assert made == []  # nothing started before the first reset
