"""Chat models: the client, its settings, and a scripted server that speaks the same
protocol.

Each name is imported on first use."""

from typing import TYPE_CHECKING

from intercode.lazy import lazy_exports

if TYPE_CHECKING:
    from intercode.llm.client import ChatClient, Completion
    from intercode.llm.config import ModelConfig

__all__ = ["ChatClient", "Completion", "ModelConfig"]

__getattr__, __dir__ = lazy_exports(globals(), {
    "intercode.llm.client": ("ChatClient", "Completion"),
    "intercode.llm.config": ("ModelConfig",),
})
