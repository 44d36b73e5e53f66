"""The host's requests to the supervisor, typed: one :class:`~typing.TypedDict` per
operation of ``inbox/schema.py`` (the table the supervisor checks every request against;
``tests/unit/test_sandbox_requests.py`` holds these to it, field by field)."""

from typing import Any, Literal, NotRequired, TypedDict

from intercode.sandbox.inbox.schema import REQUESTS

__all__ = ["InterruptRequest", "Request", "ThawRequest", "TreeImportRequest", "TreeRestoreRequest",
           "TreeSnapRequest"]


class LoadRequest(TypedDict):
    op: Literal["load"]
    tree_id: str
    entries: NotRequired[list[Any]]
    cwd: NotRequired[str]


class ResetRequest(TypedDict):
    op: Literal["reset"]
    cwd: NotRequired[str]


class RestartRequest(TypedDict):
    op: Literal["restart"]
    cwd: NotRequired[str]


class InterruptRequest(TypedDict):
    op: Literal["interrupt"]
    signal: NotRequired[str]


class StatusRequest(TypedDict):
    op: Literal["status"]
    ignore: NotRequired[list[str]]


class HashesRequest(TypedDict):
    op: Literal["hashes"]
    paths: list[str]


class CaptureRequest(TypedDict):
    op: Literal["capture"]


class RunRequest(TypedDict):
    op: Literal["run"]
    argv: list[str]
    timeout: NotRequired[float | None]
    cwd: NotRequired[str]
    keep: NotRequired[int]
    hard: NotRequired[int]


class FreezeRequest(TypedDict):
    op: Literal["freeze"]
    n: NotRequired[int | None]
    delay: NotRequired[float]


class ThawRequest(TypedDict):
    op: Literal["thaw"]


class ExecApartRequest(TypedDict):
    op: Literal["exec_apart"]
    argv: list[str]
    cwd: NotRequired[str]
    env: NotRequired[dict[str, str] | None]
    timeout: NotRequired[float | None]
    keep: int
    hard: int


class ReadFileRequest(TypedDict):
    op: Literal["read_file"]
    path: str
    limit: int


class WriteFileRequest(TypedDict):
    op: Literal["write_file"]
    path: str


class TreeSnapRequest(TypedDict):
    op: Literal["tree_snap"]
    id: int
    held: NotRequired[int | None]
    count: NotRequired[bool]
    drop: NotRequired[list[int]]
    drop_held: NotRequired[list[int]]


class TreeRestoreRequest(TypedDict):
    op: Literal["tree_restore"]
    id: int
    cwd: NotRequired[str]
    pid: NotRequired[int | None]
    replay: NotRequired[str | None]
    drop: NotRequired[list[int]]
    drop_held: NotRequired[list[int]]


class TreeExportRequest(TypedDict):
    op: Literal["tree_export"]
    id: int


class TreeImportRequest(TypedDict):
    op: Literal["tree_import"]
    id: int
    entries: list[Any]
    restore: NotRequired[TreeRestoreRequest | None]
    drop: NotRequired[list[int]]
    drop_held: NotRequired[list[int]]


class TreeDropRequest(TypedDict):
    op: Literal["tree_drop"]
    id: int


class HeldRequest(TypedDict):
    op: Literal["held"]
    pid: int
    id: int


Request = (LoadRequest | ResetRequest | RestartRequest | InterruptRequest | StatusRequest
           | HashesRequest | CaptureRequest | RunRequest | FreezeRequest | ThawRequest
           | ExecApartRequest | ReadFileRequest | WriteFileRequest | TreeSnapRequest
           | TreeRestoreRequest | TreeExportRequest | TreeImportRequest | TreeDropRequest
           | HeldRequest)
# a snapshot request, which carries the snapshots and held copies to forget
DropRequest = TreeSnapRequest | TreeRestoreRequest | TreeImportRequest

TYPES: dict[str, type] = {
    "load": LoadRequest, "reset": ResetRequest, "restart": RestartRequest,
    "interrupt": InterruptRequest, "status": StatusRequest, "hashes": HashesRequest,
    "capture": CaptureRequest, "run": RunRequest, "freeze": FreezeRequest,
    "thaw": ThawRequest, "exec_apart": ExecApartRequest, "read_file": ReadFileRequest,
    "write_file": WriteFileRequest, "tree_snap": TreeSnapRequest,
    "tree_restore": TreeRestoreRequest, "tree_export": TreeExportRequest,
    "tree_import": TreeImportRequest, "tree_drop": TreeDropRequest, "held": HeldRequest,
}


def known(op: object) -> bool:
    """Whether ``op`` names a request of the schema (the host's one check per request)."""
    return isinstance(op, str) and op in REQUESTS
