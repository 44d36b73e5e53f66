"""``sandbox="intercode"``: an agent cannot forge what Inspect's scorer sees.

The agent owns its writable root, with the links ``/bin``, ``/lib`` and ``/lib64`` in it:
pointed at directories of its own, they chose the program every call of the provider
ran (``/bin/sh``), and the loader and libraries of every program. The scorer's
``exec``, ``read_file`` and ``write_file`` must see the sandbox as it is, and a link or
FIFO the agent planted must neither hang them nor reach what only pid 1 can (its
``/proc`` entries and descriptors), nor a write outside the writable area. Each case
runs on both sandbox backends; one drives a whole Inspect evaluation with a scorer.
"""

from __future__ import annotations

from typing import Any

import pytest
from backends import backends, need
from inspect_ai import Task
from inspect_ai import eval as inspect_eval
from inspect_ai.agent import react
from inspect_ai.dataset import Sample
from inspect_ai.model import get_model
from inspect_ai.scorer import CORRECT, INCORRECT, Score, Target, accuracy, scorer
from inspect_ai.solver import TaskState
from inspect_ai.tool import bash
from inspect_ai.util import sandbox
from provider_sandbox import provider_sandbox, submit, tool_call

from intercode.integrations.inspectai.sandbox import IntercodeSandboxConfig

pytestmark = pytest.mark.anyio

# the agent's programs in /tmp/fake: each says "forged" and succeeds; then /bin is theirs
SWAP_BIN = r"""
echo wrong > ~/answer.txt
mkdir -p /tmp/fake
for name in sh bash dash python3 cat base64 env mktemp stat dirname mkdir rm; do
  printf '#!/usr/bin/bash-static\necho forged\nexit 0\n' > /tmp/fake/$name
  chmod +x /tmp/fake/$name
done
rm /bin && ln -s /tmp/fake /bin && echo swapped
"""
# no loader for any dynamic program (/lib64 and /lib directories of the agent's, one
# unreadable) and a root nobody may write or search (python3: its own loader is loaded)
BREAK_LOADER = ("import os; os.chdir('/tmp'); os.unlink('/lib64'); os.unlink('/lib'); "
                "os.mkdir('/lib'); os.mkdir('/lib64'); "
                "open('/lib64/ld-linux-x86-64.so.2', 'w').write('not a loader'); "
                "os.chmod('/lib64', 0); os.chmod('/', 0o444); print('broken')")
# what the scorer asks: is the answer 42?
CHECK = ["/usr/bin/python3", "-c",
         "import sys; sys.exit(0 if open('/home/agent/answer.txt').read() == '42\\n' else 1)"]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(params=backends())
def env(request: pytest.FixtureRequest) -> Any:
    with provider_sandbox(request.param, "forgery") as box:
        yield box


async def test_a_swapped_bin_link_forges_no_exec_read_or_write(env: Any) -> None:
    agent = await env.exec(["bash", "-c", SWAP_BIN])
    assert agent.stdout == "swapped\n", agent
    # the scorer's program by its absolute path, and by name: the real ones
    failed = await env.exec(["/usr/bin/python3", "-c", "import sys; sys.exit(1)"])
    assert (failed.success, failed.returncode, failed.stdout) == (False, 1, "")
    checked = await env.exec(CHECK)
    assert (checked.success, checked.returncode) == (False, 1)
    shell = await env.exec(["sh", "-c", "echo out; echo err >&2; exit 3"])
    assert (shell.returncode, shell.stdout, shell.stderr) == (3, "out\n", "err\n")
    assert await env.read_file("answer.txt") == "wrong\n"
    await env.write_file("sub/dir/scored.txt", "by the scorer\n")
    cat = await env.exec(["/usr/bin/cat", "/home/agent/sub/dir/scored.txt"])
    assert cat.stdout == "by the scorer\n"
    # the root's link is the system's again (a call of the provider put it back)
    assert (await env.exec(["readlink", "/bin"])).stdout == "usr/bin\n"


async def test_a_broken_loader_and_a_locked_root_do_not_stop_the_scorers_program(
        env: Any) -> None:
    agent = await env.exec(["python3", "-c", BREAK_LOADER])
    assert agent.stdout == "broken\n", agent
    real = await env.exec(["/usr/bin/python3", "-c", "print(6 * 7)"])
    assert (real.returncode, real.stdout) == (0, "42\n"), real
    listed = await env.exec(["ls", "-ld", "/lib64/"])
    assert listed.success, listed


async def test_planted_fifos_and_links_neither_hang_nor_reach_pid_1(env: Any) -> None:
    agent = await env.exec(["bash", "-c",
                            "mkfifo answer.txt && ln -s /proc/1/environ environ.txt && "
                            "ln -s /proc/self/fd/1 out.txt && ln -s /etc/hostname host.txt && "
                            "ln -s /proc etc-proc && ln -s / up && mkfifo /tmp/pipe && "
                            "ln -s /tmp/pipe piped.txt && echo planted"])
    assert agent.stdout == "planted\n", agent
    for name in ("answer.txt", "piped.txt", "environ.txt", "etc-proc/self/environ",
                 "up/proc/1/status"):
        with pytest.raises(PermissionError, match="permission denied"):
            await env.read_file(name)
    for name in ("answer.txt", "out.txt", "environ.txt", "host.txt", "up/etc/passwd",
                 "up/usr/bin/new"):
        with pytest.raises(PermissionError, match="permission denied"):
            await env.write_file(name, "x")
    # a link to a file the agent may read is followed, as a shell would
    assert await env.read_file("up/etc/hostname") == "intercode\n"
    await env.write_file("up/tmp/through-a-link.txt", "ok")
    assert (await env.exec(["cat", "/tmp/through-a-link.txt"])).stdout == "ok"



@scorer(metrics=[accuracy()])
def answer_is_42() -> Any:
    """The scorer's view through exec, then through read_file."""

    async def score(state: TaskState, target: Target) -> Score:
        run = await sandbox().exec(CHECK)
        text = await sandbox().read_file("answer.txt")
        return Score(value={"exec": CORRECT if run.success else INCORRECT,
                            "read": CORRECT if text == "42\n" else INCORRECT})

    return score


@pytest.mark.parametrize("backend", backends())
def test_an_inspect_scorer_is_not_fooled_by_a_swapped_bin(backend: str, tmp_path) -> None:
    need(backend)
    replies = iter([tool_call(SWAP_BIN), submit()])
    task = Task(dataset=[Sample(input="write 42 to answer.txt", target="42")],
                sandbox=("intercode", IntercodeSandboxConfig(backend=backend)),
                solver=react(tools=[bash(timeout=60)]), scorer=answer_is_42())
    log = inspect_eval(task, model=get_model("mockllm/model", custom_outputs=replies),
                       display="none", log_dir=str(tmp_path))[0]
    assert log.status == "success", log.error
    (sample,) = log.samples or []
    assert sample.scores is not None
    (result,) = sample.scores.values()
    assert result.value == {"exec": INCORRECT, "read": INCORRECT}


async def test_output_past_the_sandboxs_budget_is_an_output_limit_error(
        env: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """With Inspect's limits set above the sandbox's output budget (its hard cap, where a
    command is stopped), a command stopped there came back as an ordinary result (exit
    137, output cut) instead of Inspect's ``OutputLimitExceededError``; a read past the
    budget named Inspect's limit instead of the one applied."""
    from inspect_ai.util import OutputLimitExceededError, SandboxEnvironmentLimits

    monkeypatch.setattr(SandboxEnvironmentLimits, "MAX_EXEC_OUTPUT_SIZE", 1 << 40)
    monkeypatch.setattr(SandboxEnvironmentLimits, "MAX_READ_FILE_SIZE", 1 << 40)
    hard = env.box.limits.output_hard
    with pytest.raises(OutputLimitExceededError) as err:
        await env.exec(["/usr/bin/head", "-c", str(hard + (1 << 20)), "/dev/zero"])
    assert err.value.limit_str == f"{hard / (1 << 20):g} MiB"
    made = await env.exec(["/usr/bin/truncate", "-s", str(hard + 1), "/home/agent/big"])
    assert made.success, made
    with pytest.raises(OutputLimitExceededError) as err:
        await env.read_file("big", text=False)
    assert err.value.limit_str == f"{hard / (1 << 20):g} MiB"
