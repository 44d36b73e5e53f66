"""Server accounts of the MySQL backend's sessions, and the liveness of runs.

The account of ``--mysql-url`` is the backend's *admin*: it owns the templates and
makes every copy. Each session (the agent's, the gold's) connects as an account of
its own, named ``ic_<run>_<random>``, with rights on its own private copies only
(granted database by database, never by wildcard). Its password is random, used for
one login and then replaced by another random one that nobody knows, and the account
is locked between logins: the hash ``SHOW GRANTS`` prints opens nothing.

A run holds the named lock ``ic_<run>`` on its admin connection for its whole life.
The accounts it makes are written, before they exist, into its registry database
``ic_<run>_m``. At start, a backend drops the databases and accounts of every run
whose lock is free (its process is gone); a live run's lock is held, so its things
are never touched.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from intercode.errors import ConfigError

__all__ = ["Account", "Accounts", "claim_run", "drop_dead_runs"]

#: What a session may do on its own copies (no GRANT OPTION, no EVENT, and no CREATE
#: TEMPORARY TABLES: a temporary table fills the server's tmpdir, which no setting bounds
#: and every session shares, until its connection ends).
PRIVILEGES = ("SELECT, INSERT, UPDATE, DELETE, CREATE, DROP, INDEX, ALTER, "
              "LOCK TABLES, CREATE VIEW, SHOW VIEW, CREATE ROUTINE, "
              "ALTER ROUTINE, EXECUTE, TRIGGER, REFERENCES")
#: Connections one session account may hold at once: its own, and a second that stops a
#: statement of the first (a session never needs more, an agent opens none itself).
MAX_CONNECTIONS = 3
RUN_NAME = re.compile(r"^(ic_[0-9a-f]{8})_")
DENIED = {1044, 1045, 1142, 1227, 1410}  # access denied / need privilege / not allowed to grant
SETUP_HINT = ("run scripts/mariadb-start, or as root: GRANT CREATE USER ON *.* TO <account>; "
              "GRANT ALL PRIVILEGES ON `ic\\_%`.* TO <account> WITH GRANT OPTION")

Query = Callable[..., list[tuple[Any, ...]]]


def grant_name(db: str) -> str:
    """``db`` as a GRANT target that matches that database only (wildcards escaped)."""
    return db.replace("\\", "\\\\").replace("_", "\\_").replace("%", "\\%")


def registry(run: str) -> str:
    """The database where a run lists its accounts."""
    return f"{run}_m"


@dataclass(frozen=True)
class Account:
    """A session's server account."""

    name: str
    host: str


class Accounts:
    """Makes, opens and drops the session accounts of one run (through the admin)."""

    def __init__(self, query: Query, run: str, host: str, mariadb: bool) -> None:
        self.query = query
        self.run = run
        self.host = host
        self._identified = ("IDENTIFIED BY" if mariadb
                            else "IDENTIFIED WITH mysql_native_password BY")

    def create_registry(self) -> None:
        """The run's registry (before any account exists)."""
        self.query(f"CREATE DATABASE IF NOT EXISTS `{registry(self.run)}`")
        self.query(f"CREATE TABLE IF NOT EXISTS `{registry(self.run)}`.accounts "
                   "(name VARCHAR(80) PRIMARY KEY, host VARCHAR(255) NOT NULL)")

    def prepare(self, admin_name: str) -> None:
        """Make the registry; a clear error now, not at the first session, if rights lack."""
        probe = Account(f"{self.run}_probe", self.host)
        try:
            self.create_registry()
            self._create_user(probe)
            try:
                self.query(f"GRANT SELECT ON `{grant_name(probe.name)}`.* TO %s@%s",
                           (probe.name, probe.host))
            finally:
                self.drop(probe)
        except Exception as exc:  # a server error: report it in one line
            code = exc.args[0] if exc.args else 0
            if code in DENIED:
                raise ConfigError(f"the server account {admin_name} cannot make session "
                                  f"accounts (server said: {exc.args[-1]}); {SETUP_HINT}") from exc
            raise

    def create(self) -> Account:
        """A new locked account with no rights yet."""
        account = Account(f"{self.run}_{secrets.token_hex(6)}", self.host)
        self._create_user(account)
        return account

    def _create_user(self, account: Account) -> None:
        self.query(f"INSERT INTO `{registry(self.run)}`.accounts VALUES (%s, %s)",
                   (account.name, account.host))
        self.query(f"CREATE USER %s@%s {self._identified} %s "
                   f"WITH MAX_USER_CONNECTIONS {MAX_CONNECTIONS} ACCOUNT LOCK",
                   (account.name, account.host, secrets.token_urlsafe(32)))

    def grant(self, account: Account, db: str) -> None:
        """Give ``account`` its rights on the database ``db`` (and nothing else)."""
        self.query(f"GRANT {PRIVILEGES} ON `{grant_name(db)}`.* TO %s@%s",
                   (account.name, account.host))

    def login(self, account: Account, connect: Callable[[str, str], Any]) -> Any:
        """A connection as ``account``: unlock with a fresh password, connect, lock again.

        The password of the login is replaced at once by a random one nobody keeps.
        """
        password = secrets.token_urlsafe(32)
        self.query(f"ALTER USER %s@%s {self._identified} %s ACCOUNT UNLOCK",
                   (account.name, account.host, password))
        try:
            return connect(account.name, password)
        finally:
            self.query(f"ALTER USER %s@%s {self._identified} %s ACCOUNT LOCK",
                       (account.name, account.host, secrets.token_urlsafe(32)))

    def drop(self, account: Account) -> None:
        """Drop the account (idempotent)."""
        self.query("DROP USER IF EXISTS %s@%s", (account.name, account.host))
        self.query(f"DELETE FROM `{registry(self.run)}`.accounts WHERE name = %s",
                   (account.name,))


def claim_run(query: Query) -> str:
    """A new run name, with its lock held by the admin connection for the run's life."""
    while True:
        run = "ic_" + secrets.token_hex(4)
        if query("SELECT GET_LOCK(%s, 0)", (run,))[0][0] == 1:
            return run


def drop_dead_runs(query: Query, own: str) -> list[str]:
    """Drop the databases and accounts of every run whose process is gone."""
    names = [n for (n,) in query("SHOW DATABASES LIKE 'ic\\_%'")]
    runs = sorted({m.group(1) for n in names if (m := RUN_NAME.match(n))} - {own})
    in_use = _databases_in_use(query)
    dropped = []
    for run in runs:
        mine = [n for n in names if n.startswith(run + "_")]
        if registry(run) not in names and any(n in in_use for n in mine):
            continue  # made by an intercode without run locks, and still in use
        if query("SELECT GET_LOCK(%s, 0)", (run,))[0][0] != 1:
            continue  # its run is alive
        try:
            _drop_run(query, run, mine)
            dropped.append(run)
        except Exception:  # another run's leftovers must not stop this run
            pass
        finally:
            query("SELECT RELEASE_LOCK(%s)", (run,))
    return dropped


def _databases_in_use(query: Query) -> set[str]:
    """Databases that connections of the admin's own account have selected."""
    rows = query("SELECT DISTINCT db FROM information_schema.PROCESSLIST WHERE db LIKE 'ic\\_%'")
    return {str(db).lower() for (db,) in rows}


def _drop_run(query: Query, run: str, databases: list[str]) -> None:
    if registry(run) in databases:
        for name, host in query(f"SELECT name, host FROM `{registry(run)}`.accounts"):
            query("DROP USER IF EXISTS %s@%s", (name, host))
    for db in sorted(databases, key=lambda n: n == registry(run)):  # the registry last
        query(f"DROP DATABASE IF EXISTS `{db}`")
