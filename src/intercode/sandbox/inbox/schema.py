"""The requests the host sends the supervisor: each operation and its fields.

One table for both ends. The supervisor (``main.py``) checks every request it reads
against it before it acts, and answers a malformed one with a one-line error; the host
(``intercode.sandbox.requests``) builds its requests as typed dictionaries that a unit
test holds to this table. It runs on the sandbox's own Python (3.9+, no imports).

``REQUESTS[op]`` maps each field to ``(types, required)``; ``None`` in ``types``
allows a null. A request has ``op`` and only the fields of its operation.
"""

NUM = (int, float)
NUM_OR_NULL = (int, float, type(None))
NAMES = (list, tuple)  # of strings: paths, an argv, snapshot ids (JSON has lists)

REQUESTS = {
    # an episode
    "load": {"tree_id": ((str,), True), "entries": ((list,), False), "cwd": ((str,), False)},
    "reset": {"cwd": ((str,), False)},
    "restart": {"cwd": ((str,), False)},
    "interrupt": {"signal": ((str,), False)},
    "status": {"ignore": (NAMES, False)},
    "hashes": {"paths": (NAMES, True)},
    "capture": {},
    "run": {"argv": (NAMES, True), "timeout": (NUM_OR_NULL, False),
            "cwd": ((str,), False), "keep": ((int,), False), "hard": ((int,), False)},
    # the shell's processes between actions (no reply; see freezer.py)
    "freeze": {"n": ((int, type(None)), False), "delay": (NUM, False)},
    "thaw": {},
    # Inspect's sandbox provider (see provider.py)
    "exec_apart": {"argv": (NAMES, True), "cwd": ((str,), False),
                   "env": ((dict, type(None)), False), "timeout": (NUM_OR_NULL, False),
                   "keep": ((int,), True), "hard": ((int,), True)},
    "read_file": {"path": ((str,), True), "limit": ((int,), True)},
    "write_file": {"path": ((str,), True)},
    # tree snapshots (see snaps.py); ``drop`` and ``drop_held`` ride on them
    "tree_snap": {"id": ((int,), True), "held": ((int, type(None)), False),
                  "count": ((bool,), False), "drop": (NAMES, False),
                  "drop_held": (NAMES, False)},
    "tree_restore": {"id": ((int,), True), "cwd": ((str,), False),
                     "pid": ((int, type(None)), False), "replay": ((str, type(None)), False),
                     "drop": (NAMES, False), "drop_held": (NAMES, False)},
    "tree_export": {"id": ((int,), True)},
    "tree_import": {"id": ((int,), True), "entries": ((list,), True),
                    "restore": ((dict, type(None)), False), "drop": (NAMES, False),
                    "drop_held": (NAMES, False)},
    "tree_drop": {"id": ((int,), True)},
    "held": {"pid": ((int,), True), "id": ((int,), True)},  # no reply (snaps.register_held)
}
NO_REPLY = ("freeze", "thaw", "held")


def problem(msg):
    """What is wrong with request ``msg`` in one line, or ``None`` if it fits its
    operation's fields (types as JSON gives them: a bool is not an int here)."""
    if not isinstance(msg, dict):
        return "a request is an object, not %s" % type(msg).__name__
    op = msg.get("op")
    fields = REQUESTS.get(op) if isinstance(op, str) else None
    if fields is None:
        return "unknown request %r" % (str(op)[:40],)
    for name, value in msg.items():
        if name == "op":
            continue
        spec = fields.get(name)
        if spec is None:
            return "request %s: unknown field %r" % (op, str(name)[:40])
        types = spec[0]
        if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
            return "request %s: field %s is %s, not %s" % (
                op, name, type(value).__name__, "/".join(t.__name__ for t in types))
    for name, (_types, required) in fields.items():
        if required and name not in msg:
            return "request %s: missing field %s" % (op, name)
    restore = msg.get("restore") if op == "tree_import" else None
    if restore is not None:  # the restore an import runs: a request of its own
        if restore.get("op") != "tree_restore":
            return "request tree_import: restore is not a tree_restore request"
        inner = problem(restore)
        if inner is not None:
            return "request tree_import: restore: " + inner
    return None
