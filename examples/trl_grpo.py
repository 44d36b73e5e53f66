"""GRPO on an intercode benchmark with TRL: the model acts through execute/submit tools.

Needs the ``trl`` extra (``pip install 'intercode[trl]'``; docs/training.md) and a
chat model whose template TRL can parse tool calls from (Qwen3, Qwen2.5, Llama 3.x,
...): a model name to load, or a local folder.

    python examples/trl_grpo.py --model Qwen/Qwen3-0.6B --benchmark bash \\
        --dataset nl2bash:clean:train --reward success --max-steps 100

Each training row is a task (the tools agent's system message and the task); each
rollout runs in a warm, sandboxed environment, and the environment's reward (here:
1.0 when solved) is the GRPO reward, logged as ``rewards/Intercode<Benchmark>TrlEnv``.

With ``--url`` the rollouts run on an ``intercode serve openenv`` server instead (the
``openenv`` extra too), which must serve the same benchmark, dataset and reward::

    intercode serve openenv bash --dataset nl2bash:clean:train --reward success \
        --max-sessions 8 --warm 8 --port 8000 &
    python examples/trl_grpo.py --model Qwen/Qwen3-0.6B --url http://127.0.0.1:8000
"""

from __future__ import annotations

import argparse
import os


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="a model name or local folder")
    parser.add_argument("--benchmark", default="bash")
    parser.add_argument("--dataset", default="nl2bash:clean:train",
                        help="a dataset or view (e.g. nl2bash:clean:train)")
    parser.add_argument("--reward", default="success", choices=["success", "baseline", "paper"])
    parser.add_argument("--max-turns", type=int, default=None,
                        help="actions per episode (default: the benchmark's own)")
    parser.add_argument("--max-steps", type=int, default=100)
    parser.add_argument("--num-generations", type=int, default=4)
    parser.add_argument("--max-completion-length", type=int, default=2048)
    parser.add_argument("--output-dir", default="runs/trl-grpo")
    parser.add_argument("--cpu", action="store_true", help="train on the CPU (float32)")
    parser.add_argument("--url", default=None,
                        help="an `intercode serve openenv` server to run the rollouts on")
    parser.add_argument("--token-env", default=None, metavar="VAR",
                        help="the environment variable holding that server's bearer token")
    args = parser.parse_args(argv)

    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")  # environment_factory is new
    from trl import GRPOConfig, GRPOTrainer

    from intercode.trl import environment_class, training_dataset

    config = GRPOConfig(
        output_dir=args.output_dir, max_steps=args.max_steps,
        num_generations=args.num_generations,
        per_device_train_batch_size=args.num_generations,
        max_completion_length=args.max_completion_length,
        max_tool_calling_iterations=args.max_turns or 10,
        logging_steps=1, report_to="none",
        **({"use_cpu": True, "bf16": False} if args.cpu else {}))
    trainer = GRPOTrainer(
        model=args.model, args=config,
        train_dataset=training_dataset(args.benchmark, args.dataset),
        environment_factory=environment_class(
            args.benchmark, args.dataset, reward=args.reward, max_turns=args.max_turns,
            url=args.url, token=os.environ.get(args.token_env) if args.token_env else None))
    trainer.train()
    trainer.save_model(args.output_dir)
    pools = getattr(trainer, "_environment_pool", {})  # TRL keeps its instances here
    faults = sum(env.faults for pool in pools.values() for env in pool)
    print(f"environment failures scored 0: {faults}")


if __name__ == "__main__":
    main()
