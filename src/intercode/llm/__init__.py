"""Chat models: the client, and a scripted server that speaks the same protocol.

Each name is imported on first use."""

from typing import TYPE_CHECKING

from intercode.lazy import lazy_exports

if TYPE_CHECKING:
    from intercode.llm.client import ChatClient, Completion, ModelConfig

__all__ = ["ChatClient", "Completion", "ModelConfig"]

__getattr__, __dir__ = lazy_exports(globals(), {
    "intercode.llm.client": ("ChatClient", "Completion", "ModelConfig"),
})
