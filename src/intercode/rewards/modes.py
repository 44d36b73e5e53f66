"""Which reward an episode earns: the paper's (the default), or one made for RL.

* ``paper``: the benchmark's own reward, as InterCode defines it (Bash's partial credit
  for files and answer, SQL's and Python's scores, CTF's and SWE's 0/1);
* ``success``: 1.0 when the task is solved, else 0.0;
* ``baseline``: the paper's reward less what doing nothing earns on the task (handing in
  the untouched starting state, measured once per task), rescaled so that solving is 1.0
  and doing nothing 0.0; worse than doing nothing is below 0 (down to -1 at a paper
  reward of 0 when doing nothing is worth 0.5). A task that doing nothing already solves
  teaches nothing: 0.0 there.

Why: on NL2Bash, handing in at once earns 0.62 on average under the paper's reward
(credit for files left untouched), so a random policy looks half good and the gradient
pulls towards doing nothing. ``docs/training.md`` says which to use when.
"""

from __future__ import annotations

from intercode.errors import ConfigError

__all__ = ["MODES", "check_mode", "shaped"]

MODES = ("paper", "success", "baseline")


def check_mode(mode: object) -> str:
    """``mode`` if it names a reward, else a one-line :class:`ConfigError`."""
    if not isinstance(mode, str) or mode not in MODES:
        raise ConfigError(f"unknown reward {mode!r}; known: {', '.join(MODES)}")
    return mode


def shaped(mode: str, reward: float, success: bool, baseline: float | None = None) -> float:
    """The reward of ``mode`` for an episode whose paper reward is ``reward``."""
    if mode == "paper":
        return reward
    if mode == "success":
        return 1.0 if success else 0.0
    if baseline is None:
        raise ValueError("the baseline reward needs the task's do-nothing reward")
    if baseline >= 1.0:
        return 0.0
    if success:
        return 1.0
    return round((reward - baseline) / (1.0 - baseline), 6)
