"""Compatibility only: the canned catalogue of preferences is gone (issue 10).

What is stored is the user's own instruction; contradictions come from canonical axes
(``learning.analyzer.axes``). ``opposite_of`` stays until the storing service reads the
finding's ``axis`` itself (then this module can be deleted).
"""

from __future__ import annotations

from learning.analyzer.axes import opposite_of

__all__ = ["opposite_of"]
