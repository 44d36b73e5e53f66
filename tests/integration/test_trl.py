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

import json
import os
import re

import pytest

if os.environ.get("INTERCODE_REQUIRE_TRL"):  # CI: a missing TRL is a failure, not a skip
    import torch
    import trl
else:
    trl = pytest.importorskip("trl", reason="TRL is not installed (pip install 'intercode[trl]')")
    torch = pytest.importorskip("torch", reason="PyTorch is not installed (TRL needs it)")

from intercode.benchmarks import get
from intercode.datasets import load_dataset
from intercode.integrations.trl import (
    environment_class,
    training_dataset,
    training_rows,
)
from intercode.integrations.trl.environment import OVER

ENV_NAME = "IntercodeBashTrlEnv"
SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<tool_call>", "</tool_call>",
           "<tool_response>", "</tool_response>", "<think>", "</think>"]


def byte_tokenizer():
    """A tokenizer with one token per byte and Qwen3's chat template, made offline."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast
    from trl.chat_template_utils import qwen3_chat_template

    alphabet = pre_tokenizers.ByteLevel.alphabet()
    vocab = {char: i for i, char in enumerate(sorted(alphabet))}
    core = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    core.decoder = decoders.ByteLevel()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=core, eos_token="<|im_end|>",
                                        pad_token="<|endoftext|>")
    tokenizer.add_special_tokens({"additional_special_tokens": SPECIAL[1:]})
    tokenizer.chat_template = qwen3_chat_template
    tokenizer.padding_side = "left"
    return tokenizer


def tiny_model(tokenizer):
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(0)
    config = Qwen2Config(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64,
                         num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=1,
                         max_position_embeddings=16384, tie_word_embeddings=True,
                         pad_token_id=tokenizer.pad_token_id,
                         eos_token_id=tokenizer.convert_tokens_to_ids("<|im_end|>"))
    return Qwen2ForCausalLM(config)


def gold_by_query():
    spec = get("bash")
    return {task.query: spec.gold_action(task) for task in load_dataset("bash-demo", "bash")}


def call(name, arguments):
    return f"<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n</tool_call>"


def scripted_trainer_class():
    """GRPOTrainer whose first completion of each group is the gold's tool calls."""
    golds = gold_by_query()

    class Scripted(trl.GRPOTrainer):
        def _generate_single_turn(self, prompt_ids, images, multimodal_fields,
                                  num_generations, has_tool_images=False):
            ids, logprobs = super()._generate_single_turn(
                prompt_ids, images, multimodal_fields, num_generations, has_tool_images)
            tok = self.processing_class
            for i, prompt in enumerate(prompt_ids):
                text = tok.decode(prompt)
                responses = re.findall(r"<tool_response>\n(.*?)\n</tool_response>", text, re.S)
                if not responses:  # a first turn: script the first of each group
                    if i % self.num_generations:
                        continue
                    query = re.findall(r"Task: (.*?)<\|im_end\|>", text, re.S)[-1]
                    reply = call("execute", {"code": golds[query]})
                elif OVER in responses[-1]:
                    reply = "Done."
                else:
                    reply = call("submit", {})
                ids[i] = tok.encode(reply + "<|im_end|>", add_special_tokens=False)
            return ids, logprobs

    return Scripted


@pytest.fixture(scope="module")
def bash_class():
    return environment_class("bash", "bash-demo", reward="success")


@pytest.fixture(scope="module")
def served_bash_class():
    """The class over ``intercode serve openenv`` (skipped without the openenv extra)."""
    pytest.importorskip("intercode.integrations.serve._openenv_core",
                        reason="the openenv extra is not installed")
    import select
    import signal
    import subprocess
    import sys

    proc = subprocess.Popen(
        [sys.executable, "-m", "intercode", "serve", "openenv", "bash", "--dataset",
         "bash-demo", "--reward", "success", "--port", "0", "--max-sessions", "4"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert proc.stdout is not None
        ready, _, _ = select.select([proc.stdout], [], [], 90)
        line = proc.stdout.readline() if ready else ""
        assert "http://" in line, f"the server did not start: {line!r}"
        url = "http://" + line.split("http://", 1)[1].split()[0]
        yield environment_class("bash", "bash-demo", reward="success", url=url)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)


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
