"""A GRPO run offline on the CPU, shared by the TRL tests and perf/bench_trl.py.

The model is built here (random weights from a tiny Qwen2 configuration) and so is its
tokenizer (one token per byte, Qwen3's chat template as TRL ships it): nothing is
downloaded. A random model never calls a tool, so :func:`scripted_trainer_class` replaces
the trainer's generation for the first completion of each group (or every completion) by
the gold's tool calls (``execute`` with the task's gold, then ``submit``), token by token:
those rollouts go through TRL's own tool-calling loop, parsing and reward path.
TRL and PyTorch are imported when called.
"""

from __future__ import annotations

import json
import re
from typing import Any

from intercode.benchmarks import get
from intercode.datasets import load_dataset
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
    import torch
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


def scripted_trainer_class(every: bool = False) -> Any:
    """GRPOTrainer whose first completion of each group (``every``: each completion) is
    the gold's tool calls."""
    import trl

    golds = gold_by_query()

    class Scripted(trl.GRPOTrainer):  # type: ignore[misc]
        def _generate_single_turn(self, prompt_ids, images, multimodal_fields,
                                  num_generations, has_tool_images=False):
            ids, logprobs = super()._generate_single_turn(
                prompt_ids, images, multimodal_fields, num_generations, has_tool_images)
            tok = self.processing_class
            for i, prompt in enumerate(prompt_ids):
                text = tok.decode(prompt)
                responses = re.findall(r"<tool_response>\n(.*?)\n</tool_response>", text, re.S)
                if not responses:  # a first turn: script the first of each group
                    if i % self.num_generations and not every:
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
