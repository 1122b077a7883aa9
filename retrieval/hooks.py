"""Work that apps above retrieval do when documents change, without retrieval importing them.

Project intelligence (attribution, signal extraction) must start for every imported document, in
the import's own transaction so that the import and the jobs it implies commit together. The
intelligence app sits above retrieval (it points at documents), so it registers its listener here
when Django starts (``IntelligenceConfig.ready``) instead of retrieval calling it by name.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol


class DocumentsChangedListener(Protocol):
    def __call__(self, *, document_ids: Sequence[str]) -> None: ...


_listeners: dict[str, DocumentsChangedListener] = {}


def documents_changed_listen(name: str, listener: DocumentsChangedListener) -> None:
    """Register (or replace) the listener called ``name``: called with the ids of the documents an
    import created or changed, inside the import's transaction."""
    _listeners[name] = listener


def documents_changed_notify(*, document_ids: Sequence[str]) -> None:
    """Tell every listener which documents changed; an error in one fails the import (atomically)."""
    if not document_ids:
        return
    for listener in list(_listeners.values()):
        listener(document_ids=document_ids)


def listeners() -> dict[str, Callable[..., None]]:
    """The registered listeners by name (for tests and diagnostics)."""
    return dict(_listeners)
