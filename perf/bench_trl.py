"""What intercode's environments cost inside TRL's GRPO loop.

    python perf/bench_trl.py [--batches 8 32] [--steps 3] [--where process served]

Trains a tiny random model (built offline: tests/trl_helpers.py) with TRL's
``GRPOTrainer`` on bash-demo, every completion replaced by the task's gold tool calls
(``execute``, then ``submit``), so each rollout is a whole episode: ``reset``, two tool
calls, ``get_reward``. The environment class is :func:`environment_class`'s, in process
or against ``intercode serve openenv`` (``url=``), its four methods timed. Per
configuration (generation batch B, where) it prints, over the steps after the first
(which builds and warms the environments):

  step s         wall seconds per training step (generation, tools, loss, optimiser)
  env s/step     of which in the environment's methods (TRL calls them one after another)
  env ms/rollout the same per rollout
  share          env s / step s

The model here is as small as a model gets, so the share is an upper bound: with a real
model the generation dominates and the environment's milliseconds per rollout stay as
measured. Results: perf/RESULTS.md ("TRL's loop").
"""

from __future__ import annotations

import argparse
import functools
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # trl_helpers, ...

FUNCTIONS = ("reset", "execute", "submit", "get_reward")


def timed_class(cls: type, spent: list[float]) -> type:
    """``cls`` with its four methods adding their wall time to ``spent[0]``."""

    def timed(name: str) -> Any:
        method = getattr(cls, name)

        @functools.wraps(method)
        def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return method(self, *args, **kwargs)
            finally:
                spent[0] += time.perf_counter() - start

        return wrapper

    return type(cls.__name__, (cls,), {name: timed(name) for name in FUNCTIONS})


def start_server(sessions: int) -> tuple[subprocess.Popen[str], str]:
    from openenv_process import start

    return start(["bash", "--dataset", "bash-demo", "--reward", "success",
                  "--max-sessions", str(sessions), "--warm", str(sessions)])


def measure(batch: int, steps: int, url: str | None) -> dict[str, float]:
    import trl
    from transformers import TrainerCallback
    from trl_helpers import byte_tokenizer, scripted_trainer_class, tiny_model

    from intercode.integrations.trl import environment_class, training_dataset

    spent = [0.0]
    cls = timed_class(environment_class("bash", "bash-demo", reward="success", url=url),
                      spent)
    marks: list[tuple[float, float]] = []  # (wall, environment seconds) at each step's end

    class Marks(TrainerCallback):  # type: ignore[misc]
        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            marks.append((time.perf_counter(), spent[0]))

    tokenizer = byte_tokenizer()
    rows = training_dataset("bash", "bash-demo")
    rows = rows.select([i % len(rows) for i in range(batch * (steps + 1))])
    with tempfile.TemporaryDirectory() as tmp:
        config = trl.GRPOConfig(
            output_dir=tmp, max_steps=steps + 1, per_device_train_batch_size=batch,
            num_generations=min(batch, 8), max_completion_length=384, learning_rate=1e-3,
            logging_steps=1, save_strategy="no", report_to="none", use_cpu=True,
            bf16=False, seed=0, shuffle_dataset=False, max_tool_calling_iterations=4)
        trainer = scripted_trainer_class(every=True)(
            model=tiny_model(tokenizer), processing_class=tokenizer, args=config,
            train_dataset=rows, environment_factory=cls, callbacks=[Marks()])
        trainer.train()
    rewards = [e["rewards/IntercodeBashTrlEnv/mean"] for e in trainer.state.log_history
               if "rewards/IntercodeBashTrlEnv/mean" in e]
    if any(r != 1.0 for r in rewards):
        raise SystemExit(f"a gold rollout did not score 1.0: {rewards}")
    (t0, e0), (t1, e1) = marks[0], marks[-1]
    measured = len(marks) - 1
    step = (t1 - t0) / measured
    env = (e1 - e0) / measured
    return {"step_s": step, "env_s": env, "env_ms_rollout": env / batch * 1000,
            "share": env / step}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, nargs="+", default=[8, 32])
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--where", nargs="+", default=["process", "served"],
                        choices=["process", "served"])
    args = parser.parse_args()
    os.environ["TRL_EXPERIMENTAL_SILENCE"] = "1"
    import transformers

    transformers.logging.set_verbosity_error()
    print(f"{'where':8} {'batch':>5} {'step s':>8} {'env s/step':>11} "
          f"{'env ms/rollout':>15} {'share':>6}")
    for batch in args.batches:
        for where in args.where:
            proc, url = start_server(batch) if where == "served" else (None, None)
            try:
                got = measure(batch, args.steps, url)
            finally:
                if proc is not None:
                    from openenv_process import stop

                    stop(proc)
            print(f"{where:8} {batch:5d} {got['step_s']:8.2f} {got['env_s']:11.3f} "
                  f"{got['env_ms_rollout']:15.1f} {got['share']:6.1%}", flush=True)


if __name__ == "__main__":
    main()
