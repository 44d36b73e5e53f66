"""The MySQL-compatible server backend (MariaDB or MySQL, given by URL).

Each backend object loads InterCode's dump into its own template databases
(``ic_<run>_t_<db>``, unique per run) and drops everything it made on close. Every
session (the agent's, the gold's) connects as a server account of its own that can
reach only its private copies (``ic_<run>_<session>_<db>``); the templates belong
to the URL's account (see ``mysql_accounts``). A session works inside a
transaction: a reset rolls back (a fraction of a millisecond) unless a statement
could have committed (DDL, ``COMMIT``, ...), in which case the copy is made again.
Results are read as they stream in, within a row, size and time budget
(``mysql_fetch``).

Agents use the logical database names: they are mapped to the physical ones in
statements (``world_1.city``, ``USE world_1``, ``'world_1'`` literals) and back in
results and error messages. Like InterCode's server, the server must compare table
names case-insensitively (``lower_case_table_names=1``).
"""

from __future__ import annotations

import itertools
import logging
import re
from typing import Any
from urllib.parse import unquote, urlsplit

from intercode.errors import ConfigError, DatasetError, SandboxError
from intercode.sql.backend import SqlBackend, SqlLimits
from intercode.sql.mysql_accounts import Accounts, claim_run, drop_dead_runs
from intercode.sql.mysql_session import MysqlSession, server_message, statement_kind
from intercode.sql.mysqldump import split_statements
from intercode.sql.store import SqlStore, dump_store

log = logging.getLogger(__name__)


def parse_url(url: str) -> dict[str, Any]:
    """``mysql://user:password@host:port`` as connection arguments."""
    try:
        parts = urlsplit(url)
        port = parts.port  # a ValueError when it is not a number in 0-65535
    except (ValueError, TypeError, AttributeError):
        parts, port = None, None
    if parts is None or parts.scheme not in ("mysql", "mariadb") or not parts.hostname:
        raise ConfigError(f"not a server URL: {url!r} (use mysql://user:password@host:port)")
    return {"host": parts.hostname, "port": port or 3306,
            "user": unquote(parts.username or "root"),
            "password": unquote(parts.password or "")}


# what a dump runs in one of its databases: a table of that database dropped, made or
# filled with values (anything else, a name with a dot, a SELECT outside quotes, could
# reach past the template it loads)
_DUMP_STATEMENT = re.compile(r"DROP\s+TABLE\s+(IF\s+EXISTS\s+)?`[^`.]+`$|"
                             r"CREATE\s+TABLE\s+`[^`.]+`\s*\(|"
                             r"INSERT\s+INTO\s+`[^`.]+`\s+VALUES\s*\(", re.I)
_QUOTED = re.compile(r"'(?:[^'\\]|\\.|'')*'|\"(?:[^\"\\]|\\.|\"\")*\"|`[^`]*`", re.S)


def dump_statement(statement: str) -> bool:
    """Whether a statement of a dump's database is one a dump makes (see above)."""
    if not _DUMP_STATEMENT.match(statement):
        return False
    return re.search(r"\bSELECT\b", _QUOTED.sub("''", statement), re.I) is None


def _backquoted(statement: str) -> str | None:
    """The first ```name``` of a statement."""
    m = re.search(r"`([^`]+)`", statement)
    return m.group(1) if m else None


def _require_innodb_tables(query: Any, host: str) -> None:
    """A ConfigError unless the server makes every new table InnoDB: ``max_heap_table_size``
    bounds one MEMORY table, not how many a session makes (server memory, until dropped)."""
    engine = query("SELECT @@GLOBAL.enforce_storage_engine")[0][0]
    if str(engine or "").lower() != "innodb":
        raise ConfigError(
            f"the server at {host} lets sessions make MEMORY tables (server memory without "
            "a bound on their number): start it with enforce_storage_engine=InnoDB "
            "(scripts/mariadb-start does)")


def _require_no_memory_tables(query: Any, host: str) -> None:
    """MySQL's counterpart of :func:`_require_innodb_tables`: a ConfigError unless the
    server has the MEMORY engine among its ``disabled_storage_engines``."""
    disabled = str(query("SELECT @@GLOBAL.disabled_storage_engines")[0][0] or "")
    if "memory" not in {name.strip().lower() for name in disabled.split(",")}:
        raise ConfigError(
            f"the server at {host} lets sessions make MEMORY tables (server memory without "
            "a bound on their number): start it with disabled_storage_engines=MEMORY")


class MysqlBackend(SqlBackend):
    """A server given by URL, with per-run databases."""

    name = "mysql"
    gold_at_reset = True  # the gold's session shares the server with the agent's

    def __init__(self, url: str, limits: SqlLimits | None = None,
                 store: SqlStore | None = None) -> None:
        try:
            import pymysql
        except ImportError as exc:
            raise ConfigError("the mysql backend needs PyMySQL: "
                              "pip install 'intercode[mysql]'") from exc
        self._pymysql = pymysql
        self.args = parse_url(url)
        self.limits = limits or SqlLimits()
        self.store = store or dump_store()
        if self.store.dump is None and self.store.mysql is None:
            raise ConfigError("the mysql backend needs a store built from a MySQL dump "
                              "(SqlStore.dump) or a user dataset's statements (SqlStore.mysql)")
        self.run_id = ""  # chosen (and locked) when the admin connection opens
        self._sessions = itertools.count()
        self._admin: Any = None
        self.accounts: Accounts | None = None
        self.dropped_runs: list[str] = []
        self.server = ""
        self.dialect = "MySQL"
        self._literal: re.Pattern[str] | None = None
        #: a fresh session's variables (for snapshots: what the agent changed)
        self.session_defaults: dict[str, str | None] | None = None

    # -- connections ---------------------------------------------------------------------

    def connect(self, user: str | None = None, password: str | None = None) -> Any:
        """A new autocommit connection (no TLS: the server is local or trusted).

        Without ``user``, as the URL's account (the admin).
        """
        args = dict(self.args)
        if user is not None:
            args.update(user=user, password=password or "")
        try:
            return self._pymysql.connect(**args, autocommit=True, charset="utf8mb4",
                                         ssl_disabled=True, connect_timeout=10,
                                         local_infile=False,
                                         read_timeout=self.limits.timeout + 30)
        except self._pymysql.err.Error as exc:
            raise SandboxError(f"cannot connect to the SQL server at {self.args['host']}:"
                               f"{self.args['port']}: {exc}") from exc

    def admin(self) -> Any:
        """The backend's own connection (holds the run's lock, loads templates, makes copies)."""
        if self._admin is None:
            self._admin = self.connect()
            try:
                try:
                    self._start()
                except self._pymysql.err.Error as exc:
                    raise SandboxError(f"the SQL server failed to set up this run: "
                                       f"{server_message(exc)}") from None
            except BaseException:
                try:
                    self.close()  # what this run made so far (its close() ends the connection)
                except Exception:  # the original error matters more
                    self._admin = None
                raise
        return self._admin

    def _start(self) -> None:
        self.query("SET SESSION wait_timeout = 31536000, lock_wait_timeout = 60")
        version, lower, me = self.query(
            "SELECT VERSION(), @@lower_case_table_names, CURRENT_USER()")[0]
        self.server = str(version)
        flavour = "MariaDB" if "mariadb" in self.server.lower() else "MySQL"
        self.dialect = f"{flavour} {self.server.split('-')[0]}"
        if int(lower) == 0:
            raise ConfigError(
                f"the server at {self.args['host']} compares table names case-sensitively; "
                "InterCode's did not: start it with lower_case_table_names=1 "
                "(scripts/mariadb-start does)")
        if flavour == "MariaDB":
            _require_innodb_tables(self.query, str(self.args["host"]))
        else:
            _require_no_memory_tables(self.query, str(self.args["host"]))
        self.run_id = claim_run(self.query)
        host = str(me).rpartition("@")[2]
        accounts = Accounts(self.query, self.run_id, host, flavour == "MariaDB")
        accounts.prepare(str(me))
        self.accounts = accounts
        self.dropped_runs = drop_dead_runs(self.query, self.run_id)
        self._load_templates()

    def query(self, sql: str, args: Any = None) -> list[tuple[Any, ...]]:
        """Run an administrative statement; return its rows."""
        with self._admin.cursor() as cur:
            cur.execute(sql, args)
            return list(cur.fetchall()) if cur.description else []

    # -- names ---------------------------------------------------------------------------

    def template(self, db: str) -> str:
        """Physical name of the pristine copy of ``db``."""
        return f"{self.run_id}_t_{db.lower()}"

    def copy_name(self, session: int, db: str) -> str:
        """Physical name of a session's private copy of ``db``."""
        return f"{self.run_id}_{session}_{db.lower()}"

    def _load_templates(self) -> None:
        """The store's databases (only those): a user dataset's statements, or the
        databases of the MySQL dump the store was built from."""
        self.query("SET SESSION sql_mode = 'NO_AUTO_VALUE_ON_ZERO'")
        self.query("SET SESSION foreign_key_checks = 0")
        if self.store.mysql is not None:
            self._load_user_templates(self.store.mysql)
        else:
            self._load_dump_templates()
        for name, db in self.store.databases.items():
            for table in db.tables:
                got = self.query(f"SELECT COUNT(*) FROM `{self.template(name)}`.`{table}`")[0][0]
                if not isinstance(got, int):
                    raise SandboxError(f"cannot count rows of {name}.{table}")
        self.query("SET SESSION foreign_key_checks = 1")

    def _load_user_templates(self, statements: dict[str, tuple[tuple[str, Any], ...]]) -> None:
        """A user dataset's databases (see ``sql.userdb``); a statement the server refuses
        is a :class:`DatasetError` naming the database."""
        for name, todo in statements.items():
            self.query(f"CREATE DATABASE `{self.template(name)}` CHARACTER SET utf8mb4 "
                       "COLLATE utf8mb4_general_ci")
            self._admin.select_db(self.template(name))
            for sql, args in todo:
                try:
                    self.query(sql, args)
                except self._pymysql.err.Error as exc:
                    raise DatasetError(f"the database {name} cannot be loaded on the server: "
                                       f"{exc.args[-1] if exc.args else exc} (in "
                                       f"{sql[:80]!r})") from None

    def _load_dump_templates(self) -> None:
        assert self.store.dump is not None
        try:
            text = self.store.dump.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise DatasetError(f"cannot read the SQL dump {self.store.dump}: {exc}") from exc
        current = None
        for statement in split_statements(text):
            head = statement[:30].upper()
            if head.startswith(("CREATE USER", "GRANT", "FLUSH", "LOCK", "UNLOCK")):
                continue
            if head.startswith("CREATE DATABASE"):
                name = _backquoted(statement)
                if name in self.store.databases:
                    self.query(f"CREATE DATABASE `{self.template(name)}` CHARACTER SET "
                               "utf8mb4 COLLATE utf8mb4_general_ci")
            elif head.startswith("USE"):
                name = _backquoted(statement)
                current = name if name in self.store.databases else None
                if current is not None:
                    self._admin.select_db(self.template(current))
            elif current is not None:
                if not dump_statement(statement):
                    raise DatasetError(f"{self.store.dump.name}: a statement a database dump "
                                       f"does not make, not run: {statement[:80]!r}")
                self.query(statement)

    def clone(self, db: str, target: str) -> None:
        """Copy the template of ``db`` into ``target`` (replacing it)."""
        source = self.template(db)
        self.query(f"DROP DATABASE IF EXISTS `{target}`")
        self.query(f"CREATE DATABASE `{target}` CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci")
        self.query("SET SESSION foreign_key_checks = 0")
        tables = [t for (t,) in self.query(f"SHOW TABLES FROM `{source}`")]
        for table in tables:
            self.query(f"CREATE TABLE `{target}`.`{table}` LIKE `{source}`.`{table}`")
            self.query(f"INSERT INTO `{target}`.`{table}` SELECT * FROM `{source}`.`{table}`")
        if tables:  # fresh statistics, so that every copy gets the same query plans
            self.query("ANALYZE TABLE " + ", ".join(f"`{target}`.`{t}`" for t in tables))

    def literal_pattern(self) -> re.Pattern[str]:
        """Database names as string literals (``'db'``)."""
        if self._literal is None:
            alternatives = "|".join(re.escape(n) for n in self.store.databases)
            self._literal = re.compile(rf"(['\"])({alternatives})\1", re.I)
        return self._literal

    def session(self, trusted: bool = False) -> MysqlSession:
        """A new session with its own connection (``trusted``: the gold's, whose tables
        the agent's bounds do not cut)."""
        self.admin()
        try:
            return MysqlSession(self, next(self._sessions), trusted)
        except self._pymysql.err.Error as exc:
            raise SandboxError(f"the SQL server failed to open a session: "
                               f"{server_message(exc)}") from None

    def gold_session(self) -> MysqlSession:
        """A session for the gold (trusted dataset SQL)."""
        return self.session(trusted=True)

    def close(self) -> None:
        """Drop every account and database of this run, and release its lock."""
        if self._admin is None:
            return
        try:
            if self.accounts is not None:
                registry = f"{self.run_id}_m"
                for name, host in self.query(f"SELECT name, host FROM `{registry}`.accounts"):
                    self.query("DROP USER IF EXISTS %s@%s", (name, host))
            pattern = self.run_id.replace("_", "\\_") + "\\_%"
            for (name,) in self.query("SHOW DATABASES LIKE %s", (pattern,)) if self.run_id else ():
                self.query(f"DROP DATABASE IF EXISTS `{name}`")
        except self._pymysql.err.Error as exc:  # the next run's start drops what is left
            log.warning("the SQL server failed to drop the databases and accounts of run "
                        "%s (the next run drops them): %s", self.run_id, server_message(exc))
        finally:
            self._admin.close()
            self._admin = None
            self.accounts = None


__all__ = ["MysqlBackend", "MysqlSession", "parse_url", "statement_kind"]
