"""Inspect on the Docker sandbox backend: ``sandbox=("intercode", config)`` and the
tasks' ``sandbox`` argument (``-T sandbox=docker``) run their episodes in containers;
a configuration that names no backend is refused in one line."""

from __future__ import annotations

import pytest
from backends import need
from inspect_ai import Task
from inspect_ai import eval as inspect_eval
from inspect_ai.agent import react
from inspect_ai.dataset import Sample
from inspect_ai.model import ChatMessageTool, get_model
from inspect_ai.tool import bash
from inspect_helpers import details, fenced, output, run_inspect, run_intercode, scores, tasks

from intercode.benchmarks import get
from intercode.errors import ConfigError
from intercode.integrations.inspectai.sandbox import (
    IntercodeSandboxConfig,
    IntercodeSandboxEnvironment,
    backend_of,
)
from intercode.integrations.inspectai.tasks import intercode_task

# in a container: its cgroup is Docker's (cgroup v1, or v2 without a private cgroup
# namespace), or its /usr comes from the image's overlay (the root itself is a tmpfs, as
# on bubblewrap, so /.dockerenv is not there)
WHERE = ("{ grep -q docker /proc/self/cgroup || grep -q ' - overlay ' /proc/self/mountinfo; }"
         " && echo container || echo no-container; whoami; hostname")


def test_the_configuration_names_the_backend(tmp_path):
    assert backend_of(None) == "bwrap"
    assert backend_of(IntercodeSandboxConfig()) == "bwrap"
    assert backend_of(IntercodeSandboxConfig(backend="docker")) == "docker"
    # Inspect hands a text configuration over as a path relative to the task
    assert backend_of(str(tmp_path / "docker")) == "docker"
    assert backend_of("bwrap") == "bwrap"
    (tmp_path / "docker").write_text("services: {}\n")  # a real file is not a backend name
    for bad in (str(tmp_path / "docker"), str(tmp_path / "compose.yaml"), "nope",
                IntercodeSandboxConfig(backend="nope")):
        with pytest.raises(ConfigError) as caught:
            backend_of(bad)
        assert "\n" not in str(caught.value)
    model = IntercodeSandboxEnvironment.config_deserialize(
        IntercodeSandboxConfig(backend="docker").model_dump())
    assert model == IntercodeSandboxConfig(backend="docker")


def test_a_task_with_an_unknown_backend_is_refused_up_front():
    with pytest.raises(ConfigError, match="unknown sandbox backend 'nope'"):
        intercode_task("bash", "bash-demo", tasks=[0], sandbox="nope")


def where(config: object, tmp_path) -> str:
    task = Task(dataset=[Sample(input="where am I")], sandbox=("intercode", config),
                solver=react(tools=[bash(timeout=60)]))
    replies = iter([output(("bash", {"command": WHERE})), output(("submit", {"answer": "x"}))])
    log = inspect_eval(task, model=get_model("mockllm/model", custom_outputs=replies),
                       display="none", log_dir=str(tmp_path))[0]
    assert log.status == "success", log.error
    (tool,) = [m for m in log.samples[0].messages if isinstance(m, ChatMessageTool)]
    return tool.text


@pytest.mark.parametrize("config", [IntercodeSandboxConfig(backend="docker"), "docker"],
                         ids=["model", "text"])
def test_inspect_tools_run_in_a_container(config, tmp_path):
    need("docker")
    assert where(config, tmp_path).split() == ["container", "agent", "intercode"]


def test_without_a_configuration_the_tools_run_in_bubblewrap(tmp_path):
    assert where(None, tmp_path).split() == ["no-container", "agent", "intercode"]


def test_a_task_on_docker_scores_as_intercode_does(tmp_path):
    """The gold scores 1.0 and a wrong action what intercode's runner gives, with the
    episodes in containers."""
    need("docker")
    bench = get("bash")
    picked = tasks("bash-demo", [0, 1])
    plans = {0: [bench.gold_action(picked[0])], 1: [WHERE, WHERE]}
    scripts = {picked[i].query: [fenced("bash", a) for a in plan] for i, plan in plans.items()}
    log = run_inspect(intercode_task("bash", "bash-demo", tasks=[0, 1], turns=2,
                                     sandbox="docker"), scripts, tmp_path)
    assert log.eval.metadata["intercode"]["sandbox"] == "docker"
    got, why = scores(log), details(log)
    assert "container" in why[1][2]["last_messages"][-2].split(), why[1]
    assert got[0] == (1.0, True)
    assert got[1][0] < 1.0
    for i in (0, 1):
        assert got[i] == run_intercode("bash", "bash-demo", i, plans[i], turns=2,
                                       sandbox="docker"), i
