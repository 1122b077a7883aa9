"""The feedback app's tunables, typed and range-checked (see ``core.conf``)."""

from __future__ import annotations

from core.conf import AppSettings, Tunable


class FeedbackSettings(AppSettings):
    """Declared here once; values come from Django settings or the environment."""

    FEEDBACK_BULK_MAX_EVENTS = Tunable(
        1000,
        minimum=1,
        maximum=100_000,
        doc="the most events one bulk request may carry (all are stored or none); keep a full request "
        "under DATA_UPLOAD_MAX_MEMORY_SIZE",
    )
    FEEDBACK_MAX_SNAPSHOT_BYTES = Tunable(
        64 * 1024,
        minimum=1024,
        maximum=16 * 1024 * 1024,
        doc="the largest JSON field of an event (snapshots, context, metadata) and of a task snapshot, in bytes",
    )
    FEEDBACK_MAX_TEXT_CHARS = Tunable(
        10_000, minimum=100, maximum=1_000_000, doc="the longest free text of an event or reason of a rating"
    )


feedback_settings = FeedbackSettings()
