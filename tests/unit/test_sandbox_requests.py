"""The host's typed requests (sandbox/requests.py) are the supervisor's schema
(sandbox/inbox/schema.py): the same operations, fields and required fields."""

from __future__ import annotations

from typing import get_type_hints

import pytest

from intercode.sandbox import requests
from intercode.sandbox.inbox import schema


def test_every_operation_has_one_typed_request():
    assert set(requests.TYPES) == set(schema.REQUESTS)
    assert set(schema.NO_REPLY) <= set(schema.REQUESTS)


@pytest.mark.parametrize("op", sorted(schema.REQUESTS))
def test_a_typed_request_has_the_schemas_fields(op):
    typed = requests.TYPES[op]
    fields = schema.REQUESTS[op]
    assert set(get_type_hints(typed)) == {"op", *fields}
    assert typed.__required_keys__ == {"op", *(n for n, (_, req) in fields.items() if req)}


@pytest.mark.parametrize(("msg", "why"), [
    ("x", "a request is an object"),
    ({"op": "nope"}, "unknown request"),
    ({"op": 3}, "unknown request"),
    ({"op": "hashes"}, "missing field paths"),
    ({"op": "hashes", "paths": "a"}, "field paths is str"),
    ({"op": "tree_snap", "id": True}, "field id is bool"),
    ({"op": "tree_snap", "id": 1, "count": 1}, "field count is int"),
    ({"op": "capture", "x": 1}, "unknown field 'x'"),
    ({"op": "tree_import", "id": 1, "entries": [], "restore": {"op": "reset"}},
     "not a tree_restore request"),
    ({"op": "tree_import", "id": 1, "entries": [],
      "restore": {"op": "tree_restore", "id": 1, "pid": "1"}}, "restore: request tree_restore"),
])
def test_the_supervisor_names_what_is_wrong_in_one_line(msg, why):
    found = schema.problem(msg)
    assert found is not None and why in found and "\n" not in found


@pytest.mark.parametrize("msg", [
    {"op": "capture"}, {"op": "load", "tree_id": "t", "entries": []},
    {"op": "run", "argv": ["true"], "timeout": 1.5, "cwd": "/", "keep": 1, "hard": 2},
    {"op": "run", "argv": ["true"], "timeout": None},
    {"op": "tree_snap", "id": 1, "held": None, "count": False, "drop": [], "drop_held": []},
    {"op": "tree_import", "id": 1, "entries": [], "restore": {
        "op": "tree_restore", "id": 1, "cwd": "/", "replay": "x"}},
    {"op": "freeze", "n": 3, "delay": 0.005}, {"op": "held", "pid": 5, "id": 1},
])
def test_the_hosts_requests_pass(msg):
    assert schema.problem(msg) is None
