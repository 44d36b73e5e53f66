"""The Docker backend: :class:`~intercode.sandbox.docker.sandbox.DockerSandbox` and what
only it uses: the engine's API (``engine``), the host's socket (``link``), the
multiplexed stream (``stream``), its networks (``network``) and images (``images``)."""

from intercode.sandbox.docker.sandbox import DockerSandbox

__all__ = ["DockerSandbox"]
