"""What a fork server of workers does once, before it forks any (see
:func:`intercode.runner.workerserver.worker_context`): besides importing the modules every
worker needs, it reads the code that goes into the sandboxes and the digest the gold
cache keys its entries with. So every worker it forks runs, sends into its sandboxes and
names in its stored results the same code, the code of the server's start (a worker
spawned afresh would read the files as they are when it starts: after an upgrade in
the middle of a long process, another version than the one its modules were imported
from). A module a worker imports later must still be the server's version
(``codecheck``): one whose file changed since is refused with a clear error."""

from __future__ import annotations

from intercode.envs.gold_cache import sandbox_code_digest
from intercode.runner import codecheck
from intercode.sandbox.supervisor import RELAY_MODULES, inbox_sources, sources_digest

__all__: list[str] = []

# the boot code of a bubblewrap sandbox and of a docker one, and the digests
inbox_sources()
inbox_sources(RELAY_MODULES)
sources_digest()
sandbox_code_digest()
codecheck.freeze()
