"""The bubblewrap backend: :class:`~intercode.sandbox.bwrap.sandbox.BwrapSandbox` and
what only it uses (its network, :mod:`~intercode.sandbox.bwrap.netns`)."""

from intercode.sandbox.bwrap.sandbox import BwrapSandbox

__all__ = ["BwrapSandbox"]
