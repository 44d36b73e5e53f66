"""``sandbox="intercode"``: Inspect's SandboxEnvironment on intercode's sandbox.

Each sample gets a fresh sandbox (an empty task tree, the pinned root's ``/usr``
read-only, no network, intercode's limits) so Inspect's ``bash()`` / ``python()`` tools
run in it. The backend is bubblewrap unless the configuration names another:
``sandbox=("intercode", IntercodeSandboxConfig(backend="docker"))`` in Python, or
``--sandbox intercode:docker`` on Inspect's command line (a configuration that names a
backend and no existing file).
Every call is answered by the sandbox's pid 1 (``inbox/provider.py``), which the agent
cannot reach: a command runs once none of the agent's processes does, with the links
``/bin``, ``/lib``, ``/lib64``, ``/sbin`` of the writable root put back as they were (the
agent could otherwise choose the program, the dynamic loader and the libraries a
command runs with), a program named without a slash is found only where the agent
cannot write, and stdout and stderr come back apart. Files are read and written by pid
1 itself with no-follow opens, links resolved by it, never into ``/proc``, only regular
files, with the agent's permissions. What the program then reads of the agent's tree
(its directory, ``$HOME``'s dotfiles, Python's user site) is the caller's to avoid
(``python3 -I``, ``bash --noprofile --norc``).
"""

from __future__ import annotations

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
from intercode.integrations.inspectai.running import blocking
from intercode.sandbox import BACKENDS, Limits, create_sandbox, require_backend
from intercode.sandbox.filetree import FileTree
from intercode.sandbox.layout import Layout
from intercode.sandbox.supervisor import SupervisedSandbox

__all__ = ["IntercodeSandboxConfig", "IntercodeSandboxEnvironment"]

MiB = 1 << 20
FOREVER = 24 * 3600.0  # Inspect's "no timeout"
ANSWER_GRACE = 60.0  # s: how much longer than a command's time limit its answer may take


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

    def __init__(self, box: SupervisedSandbox, home: str) -> None:
        super().__init__()
        self.box = box
        self.home = home

    @classmethod
    async def sample_init(cls, task_name: str, config: SandboxEnvironmentConfigType | None,
                          metadata: dict[str, str]) -> dict[str, SandboxEnvironment]:
        """A started sandbox with an empty task tree."""
        layout = Layout()
        box = create_sandbox(backend_of(config), sandbox_limits(), layout)
        if not isinstance(box, SupervisedSandbox):  # both built-in backends are
            raise ConfigError(f"sandbox 'intercode' cannot run on {type(box).__name__}")
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

    async def _call(self, op: str, fields: dict[str, Any], blob: bytes = b"",
                    wait: float = 120.0) -> tuple[dict[str, Any], bytes]:
        return await blocking(self.box.provider_call, op, fields, blob, wait)

    async def exec(self, cmd: list[str], input: str | bytes | None = None,
                   cwd: str | None = None, env: dict[str, str] | None = None,
                   user: str | None = None, timeout: int | None = None,
                   timeout_retry: bool = True, concurrency: bool = True) -> ExecResult[str]:
        """Run ``cmd`` in the sandbox (as its one user), stdout and stderr apart."""
        if user is not None and user != Layout().user:
            raise SandboxUserUnsupportedError(f"the intercode sandbox has one user, "
                                              f"{Layout().user!r}, not {user!r}")
        if not cmd:
            raise ValueError("exec needs a command")
        _passable(*cmd, *(cwd or "",), *(env or {}).values())
        _env_names(env or {})
        data = input.encode() if isinstance(input, str) else (input or b"")
        # at most the sandbox's output budget (past it the command is stopped)
        limit = min(SandboxEnvironmentLimits.MAX_EXEC_OUTPUT_SIZE, self.box.limits.output_hard)
        wait = float(timeout) if timeout else FOREVER
        where = self._path(cwd or ".")
        fields = {"argv": [str(a) for a in cmd], "cwd": where, "timeout": wait,
                  "env": {str(k): str(v) for k, v in (env or {}).items()},
                  "keep": limit, "hard": self.box.limits.output_hard}
        reply, blob = await self._call("exec_apart", fields, data, wait + ANSWER_GRACE)
        if reply.get("error"):
            return _not_started(cmd[0], where, reply)
        if reply.get("timed_out"):
            raise TimeoutError(f"the command timed out after {timeout} seconds: "
                               f"{shlex.join(cmd)[:200]}")
        split = int(reply["stdout"])
        stdout = blob[:split].decode("utf-8", errors="replace")
        stderr = blob[split:].decode("utf-8", errors="replace")
        for text, total in zip((stdout, stderr), reply["totals"], strict=True):
            if int(total) > limit or reply.get("stopped"):
                raise OutputLimitExceededError(limit_str=_size_text(limit),
                                               truncated_output=text)
        code = reply.get("exit_code")
        returncode = -1 if code is None else int(code)
        return ExecResult(success=returncode == 0, returncode=returncode, stdout=stdout,
                          stderr=stderr)

    async def write_file(self, file: str, contents: str | bytes) -> None:
        """Write ``contents`` to ``file`` (parents created)."""
        _passable(file)
        data = contents.encode() if isinstance(contents, str) else contents
        path = self._path(file)
        reply, _ = await self._call("write_file", {"path": path}, data)
        _raise_for(reply, path)

    @overload
    async def read_file(self, file: str, text: Literal[True] = True) -> str: ...

    @overload
    async def read_file(self, file: str, text: Literal[False]) -> bytes: ...

    async def read_file(self, file: str, text: bool = True) -> str | bytes:
        """The contents of ``file`` (text: UTF-8)."""
        _passable(file)
        path = self._path(file)
        # at most the sandbox's output budget: pid 1 holds the contents once
        limit = min(SandboxEnvironmentLimits.MAX_READ_FILE_SIZE, self.box.limits.output_hard)
        reply, data = await self._call("read_file", {"path": path, "limit": limit})
        if reply.get("error") == "too_large":
            raise OutputLimitExceededError(limit_str=_size_text(limit), truncated_output=None)
        _raise_for(reply, path)
        return data.decode("utf-8") if text else data


def _size_text(size: int) -> str:
    """``size`` bytes as Inspect writes its limits (``"10 MiB"``)."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale:
            return f"{size / scale:g} {unit}"
    return f"{size} B"


def _passable(*texts: object) -> None:
    """Refuse, as the system would (``ValueError``, which Inspect gives the model as a
    tool error), a text no path, argument or environment can hold: a NUL byte, or a
    lone surrogate that is not an undecodable byte (``UnicodeEncodeError``)."""
    for text in texts:
        if isinstance(text, str):
            if "\0" in text:
                raise ValueError("embedded null byte")
            os.fsencode(text)


def _env_names(env: dict[str, str]) -> None:
    for name in env:
        _passable(name)
        if not name or "=" in str(name):
            raise ValueError(f"illegal environment variable name: {str(name)[:100]!r}")


def _not_started(program: str, cwd: str, reply: dict[str, Any]) -> ExecResult[str]:
    """What a command that could not start gives: PermissionError for a program that
    may not be run, else a failed result saying why (127: no such program)."""
    error, message = str(reply["error"]), str(reply.get("message", ""))
    if reply.get("where") == "cwd":
        return ExecResult(success=False, returncode=126, stdout="",
                          stderr=f"cannot enter {cwd}: {message}\n")
    if error in ("EACCES", "EPERM"):
        raise PermissionError(f"permission denied executing {program!r}")
    if error == "ENOENT":
        return ExecResult(success=False, returncode=127, stdout="",
                          stderr=f"{program}: not found\n")
    return ExecResult(success=False, returncode=126, stdout="",
                      stderr=f"{program}: {message}\n")


def _raise_for(reply: dict[str, Any], path: str) -> None:
    """Inspect's exception for a file call that failed (none if it did not)."""
    error = reply.get("error")
    if not error:
        return
    if error == "not_found":
        raise FileNotFoundError(f"no such file or directory: {path}")
    if error == "denied":
        raise PermissionError(f"permission denied: {path}")
    if error == "is_dir":
        raise IsADirectoryError(f"is a directory: {path}")
    raise RuntimeError(f"{path}: {str(reply.get('message', error))[:200]}")
