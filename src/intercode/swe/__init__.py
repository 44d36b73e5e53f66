"""IC-SWE-bench's host side: repositories, environments, test plans, patches, grading."""

__all__: list[str] = []
