"""A throwaway MariaDB server for tests that exhaust a server's resources.

It runs from a fresh data directory with the project's settings
(``scripts/mariadb-intercode.cnf``) and a temporary directory (``tmpdir``) on a small
tmpfs, listens on a free port of 127.0.0.1, and has the admin account
``scripts/mariadb-start`` makes. Starting it needs root (the tmpfs mount) and MariaDB's
server binaries; tests that need it skip without them.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

SETTINGS = Path(__file__).resolve().parents[1] / "scripts" / "mariadb-intercode.cnf"
TMP_BYTES = 48 << 20


@dataclass(frozen=True)
class Server:
    """A running throwaway server."""

    url: str
    tmpdir: Path
    socket: Path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _run(*cmd: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=False)


@contextmanager
def small_tmp_server(settings: Path = SETTINGS) -> Iterator[Server | str]:
    """A server whose tmpdir is a 48 MiB tmpfs; a ``str`` (why not) if none can start.
    ``settings``: its option file (the project's by default)."""
    import pymysql

    mariadbd, install = shutil.which("mariadbd"), shutil.which("mariadb-install-db")
    for path in ("/usr/sbin/mariadbd",):
        mariadbd = mariadbd or (path if Path(path).exists() else None)
    if mariadbd is None or install is None:
        yield "no MariaDB server binaries (mariadbd, mariadb-install-db)"
        return
    base = Path(tempfile.mkdtemp(prefix="intercode-mariadb-"))
    data, tmp, sock = base / "data", base / "tmp", base / "sock"
    tmp.mkdir()
    mounted = _run("mount", "-t", "tmpfs", "-o", f"size={TMP_BYTES},mode=1777", "tmpfs",
                   str(tmp)).returncode == 0
    proc = None
    try:
        if not mounted:
            yield "cannot mount a small tmpfs (needs root)"
            return
        common = (f"--defaults-file={settings}", "--user=root", f"--datadir={data}")
        made = _run(install, *common, "--auth-root-authentication-method=normal",
                    "--skip-test-db")
        assert made.returncode == 0, made.stderr[-2000:]
        port = _free_port()
        proc = subprocess.Popen([mariadbd, *common, f"--tmpdir={tmp}", f"--socket={sock}",
                                 f"--port={port}", f"--pid-file={base / 'pid'}",
                                 "--innodb-buffer-pool-size=32M", "--skip-name-resolve",
                                 f"--log-error={base / 'error.log'}"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        root = None
        for _ in range(300):
            assert proc.poll() is None, (base / "error.log").read_text()[-2000:]
            try:
                root = pymysql.connect(unix_socket=str(sock), user="root", autocommit=True)
                break
            except pymysql.err.Error:
                time.sleep(0.05)
        assert root is not None, "the throwaway server did not start"
        with root.cursor() as cur:
            cur.execute("CREATE USER 'intercode'@'127.0.0.1' IDENTIFIED BY 'intercode'")
            cur.execute("GRANT ALL PRIVILEGES ON `ic\\_%`.* TO 'intercode'@'127.0.0.1' "
                        "WITH GRANT OPTION")
            cur.execute("GRANT CREATE USER ON *.* TO 'intercode'@'127.0.0.1'")
        root.close()
        yield Server(f"mysql://intercode:intercode@127.0.0.1:{port}", tmp, sock)
    finally:
        if proc is not None:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if mounted:
            _run("umount", str(tmp))
        shutil.rmtree(base, ignore_errors=True)
