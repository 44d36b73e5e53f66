"""Looking at results: runs loaded for reports, comparisons and transcripts.

Each name is imported on first use."""

from typing import TYPE_CHECKING

from intercode.lazy import lazy_exports

if TYPE_CHECKING:
    from intercode.report.build import load_runs, write_report

__all__ = ["load_runs", "write_report"]

__getattr__, __dir__ = lazy_exports(globals(), {
    "intercode.report.build": ("load_runs", "write_report"),
})
