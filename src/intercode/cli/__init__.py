"""The ``intercode`` command line (the only place that configures logging).

One module per sub-command, each with its parser (``add_<command>``) and what it runs
(``cmd_<command>``), importing its dependencies when it runs: ``evaluate`` (eval),
``validate``, ``play``, ``runs`` (report, compare, show, export), ``serve``, ``doctor``,
``image``, ``datasets``. Shared: ``options`` (the environment's options), ``agent_options``
(eval's model and strategy), ``argtypes`` (option values); ``app`` builds the parser and
runs a command.
"""

from intercode.cli.app import build_parser, main

__all__ = ["build_parser", "main"]
