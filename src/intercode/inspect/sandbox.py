"""``sandbox="intercode"``: Inspect's SandboxEnvironment on intercode's sandbox.

Each sample gets a fresh sandbox (an empty task tree, the pinned root's ``/usr``
read-only, no network, intercode's limits) so Inspect's ``bash()`` / ``python()`` tools
run in it. The backend is bubblewrap unless the configuration names another:
``sandbox=("intercode", IntercodeSandboxConfig(backend="docker"))`` in Python, or
``--sandbox intercode:docker`` on Inspect's command line (a configuration that names a
backend and no existing file).
intercode's sandbox runs a command to completion with stdout and stderr interleaved and
returns text; this provider keeps them apart by sending stderr through a file inside the
sandbox, and moves file contents as base64 (binary-safe).
"""

from __future__ import annotations

import base64
import os
import posixpath
import shlex
from typing import Any, Literal, overload

from inspect_ai.util import (
    ExecResult,
    OutputLimitExceededError,
    SandboxEnvironment,
    SandboxEnvironmentConfigType,
    SandboxEnvironmentLimits,
    SandboxUserUnsupportedError,
    sandboxenv,
)
from pydantic import BaseModel, ConfigDict

from intercode.errors import ConfigError
from intercode.inspect.running import blocking
from intercode.sandbox import BACKENDS, Limits, Sandbox, create_sandbox, require_backend
from intercode.sandbox.filetree import FileTree
from intercode.sandbox.layout import Layout

MiB = 1 << 20
FOREVER = 24 * 3600.0  # Inspect's "no timeout"
SEP = "\x1e"  # between the output and the base64 of stderr (never in base64)

# exit codes of the file scripts
NOT_FOUND, DENIED, IS_DIR = 2, 13, 21

RUN = ('e=$(mktemp /tmp/.inspect-stderr.XXXXXX) || exit 125; "$@" 2>"$e"; rc=$?; '
       f'printf "{SEP}"; base64 -w0 "$e"; rm -f "$e"; exit $rc')
READ = (f'[ -d "$1" ] && exit {IS_DIR}; [ -e "$1" ] || exit {NOT_FOUND}; '
        f'[ -r "$1" ] || exit {DENIED}; stat -c %s -- "$1"; base64 -w0 -- "$1"')
WRITE = (f'[ -d "$1" ] && exit {IS_DIR}; d=$(dirname -- "$1"); mkdir -p -- "$d" 2>/dev/null; '
         f'if [ -e "$1" ]; then [ -w "$1" ] || exit {DENIED}; '
         f'else [ -w "$d" ] || exit {DENIED}; fi; base64 -d > "$1"')


def sandbox_limits() -> Limits:
    """intercode's limits, with room for Inspect's output and file sizes."""
    return Limits(timeout=FOREVER, output=160 * MiB, output_hard=192 * MiB)


class IntercodeSandboxConfig(BaseModel):
    """The configuration of ``sandbox="intercode"``: which sandbox backend runs it."""

    model_config = ConfigDict(frozen=True)  # Inspect hashes sandbox specs

    backend: str = "bwrap"


def backend_of(config: SandboxEnvironmentConfigType | None) -> str:
    """The backend a sample's configuration names (bubblewrap without one).

    Inspect turns a text configuration into a file path (relative to the task), so
    ``intercode:docker`` arrives as ``<task dir>/docker``: a text whose last part names a
    backend, with no such file, names that backend; any other text is refused."""
    if config is None:
        return "bwrap"
    if isinstance(config, IntercodeSandboxConfig):
        return require_backend(config.backend)
    if isinstance(config, str):
        name = posixpath.basename(config.rstrip("/"))
        if not os.path.exists(config):
            try:
                return require_backend(name)
            except ConfigError:
                pass
        raise ConfigError(f"sandbox 'intercode' takes a backend name ({', '.join(BACKENDS)})"
                          f" or IntercodeSandboxConfig, not {config!r}")
    raise ConfigError(f"sandbox 'intercode' takes IntercodeSandboxConfig, not "
                      f"{type(config).__name__}")


@sandboxenv(name="intercode")
class IntercodeSandboxEnvironment(SandboxEnvironment):
    """One sample's sandbox (``default``)."""

    @classmethod
    def config_deserialize(cls, config: dict[str, Any]) -> BaseModel:
        """The configuration model back from its dict (Inspect's logs store it so)."""
        return IntercodeSandboxConfig(**config)

    def __init__(self, box: Sandbox, home: str) -> None:
        super().__init__()
        self.box = box
        self.home = home

    @classmethod
    async def sample_init(cls, task_name: str, config: SandboxEnvironmentConfigType | None,
                          metadata: dict[str, str]) -> dict[str, SandboxEnvironment]:
        """A started sandbox with an empty task tree."""
        layout = Layout()
        box = create_sandbox(backend_of(config), sandbox_limits(), layout)
        await blocking(box.start)
        try:
            await blocking(box.load, FileTree.of([]))
        except BaseException:
            await blocking(box.close)
            raise
        return {"default": cls(box, layout.home)}

    @classmethod
    async def sample_cleanup(cls, task_name: str, config: SandboxEnvironmentConfigType | None,
                             environments: dict[str, SandboxEnvironment],
                             interrupted: bool) -> None:
        """Stop every process of the sample's sandboxes."""
        for env in environments.values():
            if isinstance(env, IntercodeSandboxEnvironment):
                await blocking(env.box.close)

    def _path(self, path: str) -> str:
        return posixpath.normpath(posixpath.join(self.home, path))

    async def _run(self, argv: list[str], stdin: bytes = b"", cwd: str | None = None,
                   timeout: float | None = None) -> tuple[int | None, str, bool]:
        result = await blocking(self.box.exec, argv, timeout or FOREVER,
                                self._path(cwd or "."), stdin)
        return result.exit_code, result.output, result.timed_out

    async def exec(self, cmd: list[str], input: str | bytes | None = None,
                   cwd: str | None = None, env: dict[str, str] | None = None,
                   user: str | None = None, timeout: int | None = None,
                   timeout_retry: bool = True, concurrency: bool = True) -> ExecResult[str]:
        """Run ``cmd`` in the sandbox (as its one user; ``env`` through /usr/bin/env)."""
        if user is not None and user != Layout().user:
            raise SandboxUserUnsupportedError(f"the intercode sandbox has one user, "
                                              f"{Layout().user!r}, not {user!r}")
        argv = list(cmd)
        if env:
            argv = ["/usr/bin/env", *(f"{k}={v}" for k, v in env.items()), *argv]
        data = input.encode() if isinstance(input, str) else (input or b"")
        code, output, timed_out = await self._run(["/bin/sh", "-c", RUN, "sh", *argv],
                                                  data, cwd, timeout)
        if timed_out:
            raise TimeoutError(f"the command timed out after {timeout} seconds: "
                               f"{shlex.join(cmd)[:200]}")
        stdout, _, err = output.rpartition(SEP)
        if not _:
            stdout, err = output, ""
        try:
            stderr = base64.b64decode(err).decode("utf-8", errors="replace")
        except ValueError:
            stderr = ""
        limit = SandboxEnvironmentLimits.MAX_EXEC_OUTPUT_SIZE
        for text in (stdout, stderr):
            if len(text.encode()) > limit:
                raise OutputLimitExceededError(
                    limit_str=SandboxEnvironmentLimits.MAX_EXEC_OUTPUT_SIZE_STR,
                    truncated_output=text[-limit:])
        if code == 126:
            raise PermissionError(f"permission denied executing {cmd[0]!r}")
        returncode = -1 if code is None else code
        return ExecResult(success=returncode == 0, returncode=returncode, stdout=stdout,
                          stderr=stderr)

    async def write_file(self, file: str, contents: str | bytes) -> None:
        """Write ``contents`` to ``file`` (parents created)."""
        data = contents.encode() if isinstance(contents, str) else contents
        path = self._path(file)
        code, output, _ = await self._run(["/bin/sh", "-c", WRITE, "sh", path],
                                          base64.b64encode(data))
        _raise_for(code, path, output)

    @overload
    async def read_file(self, file: str, text: Literal[True] = True) -> str: ...

    @overload
    async def read_file(self, file: str, text: Literal[False]) -> bytes: ...

    async def read_file(self, file: str, text: bool = True) -> str | bytes:
        """The contents of ``file`` (text: UTF-8)."""
        path = self._path(file)
        code, output, _ = await self._run(["/bin/sh", "-c", READ, "sh", path])
        _raise_for(code, path, output)
        size, _, encoded = output.partition("\n")
        limit = SandboxEnvironmentLimits.MAX_READ_FILE_SIZE
        if int(size) > limit:
            raise OutputLimitExceededError(
                limit_str=SandboxEnvironmentLimits.MAX_READ_FILE_SIZE_STR,
                truncated_output=None)
        data = base64.b64decode(encoded)
        return data.decode("utf-8") if text else data


def _raise_for(code: int | None, path: str, output: Any) -> None:
    if code == 0:
        return
    if code == NOT_FOUND:
        raise FileNotFoundError(f"no such file or directory: {path}")
    if code == DENIED:
        raise PermissionError(f"permission denied: {path}")
    if code == IS_DIR:
        raise IsADirectoryError(f"is a directory: {path}")
    raise RuntimeError(f"{path}: the sandbox answered {code}: {str(output)[:200]}")
