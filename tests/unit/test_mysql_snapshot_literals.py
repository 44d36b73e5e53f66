"""Settings replayed by a MySQL snapshot's restore: only plain numbers go into the SQL
unquoted; anything else (a trailing newline included) is escaped by the driver."""

from __future__ import annotations

from intercode.sql.mysql_snapshot import _setting_literal, changed_settings


class Conn:
    @staticmethod
    def escape(value: str) -> str:
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def test_numbers_stay_bare_and_other_values_are_quoted():
    assert _setting_literal(Conn, "5") == "5"
    assert _setting_literal(Conn, "-1.25") == "-1.25"
    assert _setting_literal(Conn, "5\n") == "'5\n'"
    assert _setting_literal(Conn, "1; DROP DATABASE x") == "'1; DROP DATABASE x'"
    assert _setting_literal(Conn, None) == "NULL"


def test_only_plain_variable_names_are_replayed():
    now = {"sql_mode": "ANSI", "bad\n": "1", "x`y": "2"}
    fresh = {"sql_mode": "", "bad\n": "0", "x`y": "0"}
    assert changed_settings(now, fresh) == {"sql_mode": "ANSI"}
