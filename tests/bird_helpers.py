"""A small BIRD-format dataset the tests write: databases dumped as InterCode's
``transform.py`` dumps BIRD's (MySQL, ``id_fake`` first, rows as Python tuples), tasks
as in ``ic_bird.json``, served by a local stand-in for the upstream repository."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from upstream_server import serve_files

from intercode.datafiles import FILES, DataFile
from intercode.datasets.registry import _load_registered
from intercode.fetch import blob_id
from intercode.sql.store import dump_store

# database -> table -> (columns with their types, rows)
DATABASES: dict[str, dict[str, tuple[list[tuple[str, str]], list[tuple[object, ...]]]]] = {
    "toxicology": {
        "molecule": ([("molecule_id", "text"), ("label", "text")],
                     [("TR000", "+"), ("TR001", "-"), ("TR002", "-")]),
        "atom": ([("atom_id", "text"), ("molecule_id", "text"), ("element", "text")],
                 [("TR000_1", "TR000", "cl"), ("TR001_1", "TR001", "cl"),
                  ("TR001_2", "TR001", "c"), ("TR002_1", "TR002", "o")]),
    },
    "superhero": {
        "superhero": ([("id", "int"), ("superhero_name", "text"), ("height_cm", "int"),
                       ("weight_kg", "double")],
                      [(1, "3-D Man", 188, 90.0), (2, "A-Bomb", 203, 441.0),
                       (3, "Abe Sapien", 191, 65.0), (4, "Nick Fury's double", None, None)]),
    },
}
TASKS = [
    {"question_id": 0, "db": "toxicology", "difficulty": "simple",
     "query": "In the non-carcinogenic molecules, how many contain chlorine atoms?",
     "evidence": "non-carcinogenic molecules refers to label = '-'; chlorine atoms refers "
                 "to element = 'cl'",
     "SQL": "", "gold": "SELECT COUNT(DISTINCT T1.molecule_id) FROM molecule AS T1 INNER JOIN "
                        "atom AS T2 ON T1.molecule_id = T2.molecule_id WHERE T2.element = 'cl' "
                        "AND T1.label = '-'"},
    {"question_id": 1, "db": "toxicology", "difficulty": "moderate",
     "query": "Which elements are in molecule TR001?", "evidence": "",
     "SQL": "", "gold": "SELECT element FROM atom WHERE molecule_id = 'TR001'"},
    {"question_id": 2, "db": "superhero", "difficulty": "challenging",
     "query": "Name the heroes taller than 190 cm.", "evidence": "taller than 190 cm refers "
                                                                 "to height_cm > 190",
     "SQL": "", "gold": "SELECT superhero_name FROM superhero WHERE height_cm > 190"},
]


def bird_dump(databases: dict = DATABASES) -> bytes:
    """The databases as ``transform.py`` writes ``ic_bird_dbs.sql``."""
    out = ["CREATE USER 'admin'@'%' IDENTIFIED BY 'admin';\nGRANT ALL PRIVILEGES ON *.* TO "
           "'admin'@'%';\nFLUSH PRIVILEGES;\n\n"]
    for db, tables in databases.items():
        out.append(f"CREATE DATABASE IF NOT EXISTS `{db}`;\nUSE `{db}`;\n\n")
        for table, (columns, rows) in tables.items():
            out.append(f"DROP TABLE IF EXISTS `{table}`;\nCREATE TABLE `{table}` (\n")
            out.append("\t`id_fake` int NOT NULL AUTO_INCREMENT,\n")
            out.extend(f"\t`{name}` {kind} DEFAULT NULL,\n" for name, kind in columns)
            out.append("\tPRIMARY KEY (`id_fake`)\n) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 "
                       "COLLATE=utf8mb4_general_ci;\n\n")
            out.append(f"LOCK TABLES `{table}` WRITE;\nINSERT INTO `{table}` VALUES ")
            out.append(",".join(str((i + 1, *row)).replace("None", "NULL")
                                for i, row in enumerate(rows)) + ";\nUNLOCK TABLES;\n\n")
    return "".join(out).encode()


@dataclass
class BirdUpstream:
    """The served files, what was asked for, and how the server answers."""

    root: Path
    dump: bytes
    url: str = ""
    requests: list[str] = field(default_factory=list)
    body: bytes | None = None  # served instead of the file (a corrupt download)


@contextmanager
def bird_upstream(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                  dump: bytes | None = None, pin: str | None = None,
                  tasks: bytes | None = None) -> Iterator[BirdUpstream]:
    """The test dataset served over HTTP as the pinned upstream files ``bird_dev`` and
    ``bird_dbs`` (the dump pinned by its git blob id, or by ``pin``); no mirror, a
    private cache."""
    dump = bird_dump() if dump is None else dump
    tasks = json.dumps(TASKS).encode() if tasks is None else tasks
    root = tmp_path / "upstream"
    for key, data in (("bird_dev", tasks), ("bird_dbs", dump)):
        path = root / FILES[key].upstream
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    monkeypatch.setitem(FILES, "bird_dev", DataFile(
        FILES["bird_dev"].upstream, FILES["bird_dev"].mirror,
        hashlib.sha256(tasks).hexdigest(), len(tasks)))
    monkeypatch.setitem(FILES, "bird_dbs", DataFile(
        FILES["bird_dbs"].upstream, FILES["bird_dbs"].mirror, "", 0, pin or blob_id(dump)))
    monkeypatch.delenv("INTERCODE_DATA_MIRROR", raising=False)
    monkeypatch.setenv("INTERCODE_CACHE", str(tmp_path / "cache"))
    state = BirdUpstream(root, dump)

    def alter(path: Path, body: bytes) -> bytes:
        return state.body if state.body is not None and path.name == "ic_bird_dbs.sql" else body

    with serve_files(root, alter) as served:
        state.url, state.requests = served.url, served.requests
        monkeypatch.setenv("INTERCODE_DATA_URL", state.url)
        dump_store.cache_clear()
        _load_registered.cache_clear()
        try:
            yield state
        finally:
            dump_store.cache_clear()
            _load_registered.cache_clear()
