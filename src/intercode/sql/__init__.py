"""SQL execution backends: embedded SQLite and a MySQL-compatible server."""
