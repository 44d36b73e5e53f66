"""Data files shipped with the package (read with importlib.resources)."""

__all__: list[str] = []
