"""The Ray actors: plain classes here, made remote by their users (Ray is imported lazily).

Ray runs a (synchronous, single-threaded) actor's methods on its process's main thread,
so the sandboxes an actor starts (bubblewrap's ``--die-with-parent`` follows the thread
that started it) live as long as the actor, and die with it.
"""

from __future__ import annotations

import os
from typing import Any

from intercode.envs.base import IntercodeEnv
from intercode.envs.core.base import EnvCore
from intercode.envs.factory import make_env as create_env
from intercode.envs.settings import EnvSettings
from intercode.errors import IntercodeError
from intercode.integrations.raycluster.cluster import check_node, node_failure, node_label
from intercode.runner.episode import run_task
from intercode.runner.worker import WorkerSpec, make_env, make_policy

__all__ = ["EnvActor", "EpisodeActor"]


class EpisodeActor:
    """One warm environment and one policy; runs whole episodes (``intercode eval``)."""

    def __init__(self, spec: WorkerSpec, worker_id: int) -> None:
        self.spec = spec
        self.worker_id = worker_id
        self.env: EnvCore | None = None
        self.policy: Any = None

    def start(self) -> dict[str, Any]:
        """Check the node, build the policy and a warm environment: ``{"node": ...}``, or
        ``{"fatal": text}`` when this node cannot run the environment."""
        from intercode.benchmarks import get
        from intercode.sandbox import describe_root

        try:
            check_node(self.spec.env, self.spec.settings.sandbox)
            bench = get(self.spec.env)
            root = (None if bench.sandbox is None else describe_root(
                self.spec.settings.sandbox, bench.sandbox_profile, bench.sandbox_packages))
            self.policy = make_policy(self.spec)
            self.env = make_env(self.spec)
            self.env.warm_up()
        except (IntercodeError, OSError) as exc:
            return {"fatal": node_failure(exc)}
        return {"node": node_label(), "pid": os.getpid(), "rootfs": root}

    def run(self, index: int) -> dict[str, Any]:
        """One episode: ``{"record": ...}``, or ``{"fatal": text}`` (a refused API key, an
        environment that can no longer be built): the run stops."""
        spec = self.spec
        try:
            record, self.env = run_task(self.env, lambda: make_env(spec), index, self.policy,
                                        spec.max_turns, self.worker_id,
                                        spec.known_issues.get(index))
        except (IntercodeError, OSError) as exc:
            return {"fatal": node_failure(exc)}
        return {"record": record.to_json()}

    def close(self) -> None:
        """Close the environment (its sandboxes)."""
        env, self.env = self.env, None
        if env is not None:
            env.close()


class EnvActor:
    """One warm environment driven step by step
    (:class:`intercode.integrations.raycluster.EnvPool`)."""

    def __init__(self, env: str, dataset: str, settings: EnvSettings) -> None:
        self.name = env
        self.dataset = dataset
        self.settings = settings
        self.env: IntercodeEnv | None = None

    def start(self) -> dict[str, Any]:
        """Check the node and build a warm environment."""
        try:
            check_node(self.name, self.settings.sandbox)
            self.env = create_env(self.name, self.dataset, self.settings)
            self.env.warm_up()
        except (IntercodeError, OSError) as exc:
            return {"fatal": node_failure(exc)}
        return {"node": node_label(), "pid": os.getpid(),
                "tasks": len(self.env.dataset)}

    def reset(self, task: int | None, seed: int | None) -> tuple[str, dict[str, Any]]:
        """``env.reset``: task ``task`` (None: the environment's choice)."""
        options = None if task is None else {"task": task}
        try:
            return self._env().reset(seed=seed, options=options)
        except IntercodeError:
            self.close()  # in any state: the next reset builds a fresh one
            raise

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """``env.step``."""
        try:
            observation, reward, terminated, truncated, info = self._env().step(action)
        except IntercodeError:
            self.close()
            raise
        return observation, float(reward), bool(terminated), bool(truncated), info

    def _env(self) -> IntercodeEnv:
        if self.env is None:  # closed after an error: a fresh one
            self.env = create_env(self.name, self.dataset, self.settings)
        return self.env

    def close(self) -> None:
        """Close the environment (its sandboxes)."""
        env, self.env = self.env, None
        if env is not None:
            env.close()
