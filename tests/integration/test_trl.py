"""intercode under TRL's GRPOTrainer: two real GRPO steps on bash-demo, offline, on CPU.

The model is built here (random weights from a tiny Qwen2 configuration) and so is its
tokenizer (one token per byte, Qwen3's chat template as TRL ships it): nothing is
downloaded. A random model never calls a tool, so the trainer's generation is replaced
for the first completion of each group by the gold tool calls (``execute`` with the
task's gold, then ``submit``), token by token: those rollouts go through TRL's own
tool-calling loop, parsing and reward path, and must score 1.0 where the random ones
score 0.0. Also: the environment class directly, as TRL's code calls it.
"""

from __future__ import annotations

import os

import pytest

if os.environ.get("INTERCODE_REQUIRE_TRL"):  # CI: a missing TRL is a failure, not a skip
    import torch
    import trl
else:
    trl = pytest.importorskip("trl", reason="TRL is not installed (pip install 'intercode[trl]')")
    torch = pytest.importorskip("torch", reason="PyTorch is not installed (TRL needs it)")

from trl_helpers import ENV_NAME, byte_tokenizer, call, scripted_trainer_class, tiny_model

from intercode.integrations.trl import (
    environment_class,
    training_dataset,
    training_rows,
)
from intercode.integrations.trl.environment import OVER


@pytest.fixture(scope="module")
def bash_class():
    return environment_class("bash", "bash-demo", reward="success")


@pytest.fixture(scope="module")
def served_bash_class():
    """The class over ``intercode serve openenv`` (skipped without the openenv extra)."""
    pytest.importorskip("intercode.integrations.serve._openenv_core",
                        reason="the openenv extra is not installed")
    from openenv_process import served

    with served(["bash", "--dataset", "bash-demo", "--reward", "success",
                 "--max-sessions", "4"]) as url:
        yield environment_class("bash", "bash-demo", reward="success", url=url)


@pytest.mark.parametrize("where", ["in process", "served"])
def test_two_grpo_steps_see_the_gold_score_one(tmp_path, monkeypatch, request, where):
    bash_class = request.getfixturevalue("bash_class" if where == "in process"
                                         else "served_bash_class")
    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    tokenizer = byte_tokenizer()
    model = tiny_model(tokenizer)
    config = trl.GRPOConfig(
        output_dir=str(tmp_path), max_steps=2, per_device_train_batch_size=2,
        num_generations=2, max_completion_length=384, learning_rate=1e-3,
        logging_steps=1, save_strategy="no", report_to="none", use_cpu=True, bf16=False,
        seed=0, shuffle_dataset=False, max_tool_calling_iterations=4)
    trainer = scripted_trainer_class()(
        model=model, processing_class=tokenizer, args=config,
        train_dataset=training_dataset("bash", "bash-demo"),
        environment_factory=bash_class)
    trainer.train()

    logged = [entry for entry in trainer.state.log_history if f"rewards/{ENV_NAME}/mean" in entry]
    assert len(logged) == 2, trainer.state.log_history
    # each group: the gold's rollout scores 1.0, the random model's (no tool call) 0.0
    assert [entry[f"rewards/{ENV_NAME}/mean"] for entry in logged] == [0.5, 0.5]
    assert all(entry["tools/call_frequency"] > 0 for entry in logged)
    assert all(entry["tools/failure_frequency"] == 0 for entry in logged)
    # the last step's rollouts, in order: the scripted gold first in its group
    assert list(trainer._logs["rewards"][ENV_NAME]) == [1.0, 0.0]
    environments = [env for pool in trainer._environment_pool.values() for env in pool]
    assert environments and all(env.faults == 0 for env in environments)


def test_the_tools_as_trl_renders_and_calls_them(bash_class):
    """TRL's own schema and parsing path: the class's methods as tools, a parsed call."""
    from transformers.utils import get_json_schema
    from trl.chat_template_utils import add_response_schema, supports_tool_calling

    env = bash_class()
    schemas = {s["function"]["name"]: s["function"]
               for s in map(get_json_schema, (env.execute, env.submit))}
    assert schemas["execute"]["parameters"]["required"] == ["code"]
    assert schemas["execute"]["description"].startswith("Run bash code")
    assert schemas["submit"]["parameters"]["properties"] == {}
    tokenizer = add_response_schema(byte_tokenizer())
    assert supports_tool_calling(tokenizer)
    row = training_rows("bash", "bash-demo")[0]
    assert env.reset(**row) is None
    prompt = tokenizer.apply_chat_template(row["prompt"], tools=[env.execute, env.submit],
                                           add_generation_prompt=True, tokenize=True,
                                           return_dict=False)
    completion = tokenizer.encode(call("execute", {"code": "cat /project/src/*.py | wc -l"})
                                  + "<|im_end|>", add_special_tokens=False)
    parsed = trl.trainer.grpo_trainer.parse_response(tokenizer, completion, prefix=prompt,
                                                     tools=[env.execute, env.submit])
    (tool_call,) = parsed["tool_calls"]
    assert env.execute(**tool_call["function"]["arguments"]) == "4\n"
    assert env.submit().endswith(OVER)
    assert env.get_reward() == 1.0


def test_the_answer_benchmarks_submit_takes_an_answer():
    from transformers.utils import get_json_schema

    ctf = environment_class("ctf", "ctf")
    schema = get_json_schema(ctf.__dict__["submit"].__get__(object()))["function"]
    assert schema["parameters"]["required"] == ["answer"]
    assert "flag" in schema["parameters"]["properties"]["answer"]["description"]
