"""An episode record's JSON dict is what ``dataclasses.asdict`` gave: the same values, and
every container a copy (changing the dict never changes the record)."""

from __future__ import annotations

import json
from collections import OrderedDict, namedtuple
from dataclasses import asdict, dataclass
from enum import IntEnum

from intercode.runner.records import EpisodeRecord, Turn, plain_copy

Point = namedtuple("Point", "x y")


class Level(IntEnum):
    LOW = 1


@dataclass(frozen=True)
class Inner:
    name: str
    values: tuple[int, ...]


def record() -> EpisodeRecord:
    turns = (Turn("ls", "a\nb", 0.5, llm={"calls": 1, "prompts": ["m1", "m2"]}),
             Turn("submit", "", 1.0, submit=True, exit_code=None, env_s=0.01))
    info = {"diff_miss": [["a.txt", "??"]], "pair": ("x", 1), "nested": {"k": [1.5, None]},
            "point": Point(1, 2), "ordered": OrderedDict(a=1),
            "ordered_inner": OrderedDict(a=[Inner("i", (1,))]), "level": Level.LOW,
            "inner": Inner("j", (2, 3)), 7: "int key"}
    return EpisodeRecord(env="bash", dataset="d", task=3, source="s", source_index=3,
                         query="q", agent="gold", status="ok", reward=1.0, success=True,
                         turns=turns, reward_info=info, llm={"calls": 2},
                         messages={"m1": {"role": "user", "content": "hi"}},
                         extra={"tags": ["a"], "when": (1, 2)})


def as_asdict_gave(rec: EpisodeRecord) -> dict:
    data = asdict(rec)
    data["turns"] = [asdict(t) for t in rec.turns]
    if data["messages"] is None:
        del data["messages"]
    return data


def test_the_dict_is_the_one_asdict_gave():
    rec = record()
    new, old = rec.to_json(), as_asdict_gave(rec)
    assert new == old
    assert repr(new) == repr(old)  # the same types too (tuples, namedtuples, enums...)
    without = EpisodeRecord(**{**rec.__dict__, "messages": None})
    assert "messages" not in without.to_json()
    assert without.to_json() == as_asdict_gave(without)


def test_every_container_is_a_copy():
    rec = record()
    data = rec.to_json()
    data["reward_info"]["nested"]["k"].append("changed")
    data["turns"][0]["llm"]["prompts"].append("m3")
    data["extra"]["tags"].clear()
    again = rec.to_json()
    assert again["reward_info"]["nested"]["k"] == [1.5, None]
    assert again["turns"][0]["llm"]["prompts"] == ["m1", "m2"]
    assert again["extra"]["tags"] == ["a"]
    assert rec.reward_info is not None and rec.reward_info["nested"]["k"] == [1.5, None]


def test_a_plain_record_serialises():
    rec = EpisodeRecord(env="sql", dataset="d", task=0, source="s", source_index=0, query="q",
                        agent="gold", status="ok", reward=0.5, success=False,
                        turns=(Turn("select 1", "1", 0.5),), reward_info={"rows": [[1]]})
    assert json.loads(json.dumps(rec.to_json())) == as_asdict_gave(rec)
    assert plain_copy(Inner("x", (1,))) == {"name": "x", "values": (1,)}
