"""Host time of the ``db.table`` rewrite and of Spider's DISTINCT deletion.

Run by hand:  python perf/bench_sql_rewrite.py

Both run on the host on agent text, so their worst case is an agent's lever on host
CPU. Prints the median time of a typical statement, and the time of hostile ones at
the rewrite's size bound (``qualify.MAX_CHARS``; longer statements are not rewritten)
and at the 1 MiB action limit for the DISTINCT deletion.
"""

from __future__ import annotations

import time

from common import median_ms

from intercode.rewards.spider import remove_distinct
from intercode.sql.mysql_compat import map_qualified
from intercode.sql.qualify import MAX_CHARS
from intercode.sql.store import dump_store


def once_ms(fn) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1000


def main() -> None:
    dbs = dump_store().databases
    typical = ("SELECT conductor.Name, orchestra.Orchestra FROM orchestra.conductor JOIN "
               "orchestra ON conductor.Conductor_ID = orchestra.Conductor_ID")
    print(f"typical rewrite: {median_ms(lambda: map_qualified(typical, dbs, str), 2000):.3f} ms")
    plain = "SELECT count(*) FROM singer WHERE Age > 20"
    print(f"no database name: {median_ms(lambda: map_qualified(plain, dbs, str), 2000):.3f} ms")
    n = MAX_CHARS
    hostile = {"dots": "world_1.city " + "a." * (n // 2 - 8),
               "parens": "(" * (n - 30) + "FROM world_1.city",
               "words": "SELECT world_1.city " + "x " * (n // 2 - 12)}
    for name, sql in hostile.items():
        print(f"hostile rewrite, {name}, {len(sql)} chars: "
              f"{once_ms(lambda s=sql: map_qualified(s, dbs, str)):.0f} ms")
    big = 1 << 20
    for name, sql in {"words": "distinct " * (big // 9), "quotes": "'" * big,
                      "comments": "/*" * (big // 2)}.items():
        print(f"remove_distinct, {name}, {len(sql)} chars: "
              f"{once_ms(lambda s=sql: remove_distinct(s)):.0f} ms")


if __name__ == "__main__":
    main()
