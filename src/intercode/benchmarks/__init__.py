"""Benchmarks: each declared once (:class:`Benchmark`), built-in or from a plugin."""

from intercode.benchmarks.registry import (
    benchmarks,
    get,
    known,
    names,
    owner,
    register,
    unregister,
)
from intercode.benchmarks.spec import Benchmark, Parsing, Prompting

__all__ = ["Benchmark", "Parsing", "Prompting", "benchmarks", "get", "known", "names", "owner",
           "register", "unregister"]
