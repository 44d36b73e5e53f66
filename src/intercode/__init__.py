"""intercode: interactive coding benchmarks as sandboxed Gymnasium environments."""

__version__ = "0.1.0"
