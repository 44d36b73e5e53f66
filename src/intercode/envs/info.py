"""What a step reports about an action, typed once for every environment.

Gymnasium's ``info`` is a dict; :class:`ActionInfo` is how the environments build its
common part (from the sandbox's :class:`~intercode.sandbox.base.ExecResult`) and how
the runner reads it back, instead of copying fields one by one in each place;
:func:`plain` makes such data JSON-ready.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from intercode.sandbox.base import ExecResult

__all__ = ["ActionInfo", "plain"]


@dataclass(frozen=True)
class ActionInfo:
    """The common part of the ``info`` of a step that ran an action.

    ``exit_code`` is the action's status (``None``: none was reported, e.g. the shell
    had to be replaced); ``action_executed`` in the dict is ``exit_code == 0``, as
    upstream's. ``cwd`` is the shell's working directory afterwards, where it has one.
    """

    exit_code: int | None
    timed_out: bool = False
    output_truncated: bool = False
    shell_restarted: bool = False
    cwd: str | None = None

    @classmethod
    def of(cls, result: ExecResult) -> ActionInfo:
        """The info of a sandbox action."""
        return cls(exit_code=result.exit_code, timed_out=result.timed_out,
                   output_truncated=result.output_truncated,
                   shell_restarted=result.shell_restarted, cwd=result.cwd)

    @classmethod
    def read(cls, info: Mapping[str, Any]) -> ActionInfo:
        """Read it back from a step's ``info`` (missing or odd values: the defaults)."""
        code = info.get("exit_code")
        cwd = info.get("cwd")
        return cls(exit_code=code if isinstance(code, int) and not isinstance(code, bool)
                   else None,
                   timed_out=info.get("timed_out") is True,
                   output_truncated=info.get("output_truncated") is True,
                   shell_restarted=info.get("shell_restarted") is True,
                   cwd=cwd if isinstance(cwd, str) else None)

    def as_dict(self, **extra: Any) -> dict[str, Any]:
        """The ``info`` dict, with the environment's own fields added."""
        data: dict[str, Any] = {"exit_code": self.exit_code,
                                "action_executed": self.exit_code == 0,
                                "timed_out": self.timed_out,
                                "output_truncated": self.output_truncated,
                                "shell_restarted": self.shell_restarted}
        if self.cwd is not None:
            data["cwd"] = self.cwd
        data.update(extra)
        return data


def plain(value: Any) -> Any:
    """JSON-ready data (numpy scalars and other objects become numbers or text), e.g. of
    a step's ``info`` or an evaluation's parts, for a server's answer or a stored result."""
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if value is None or isinstance(value, bool | int | float | str):
        return value
    item = getattr(value, "item", None)
    if callable(item):
        try:
            return plain(item())
        except (TypeError, ValueError):
            pass
    return str(value)
