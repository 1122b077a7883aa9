"""Project intelligence's tunables, typed and range-checked (see ``core.conf``)."""

from __future__ import annotations

from core.conf import AppSettings, Tunable


class IntelligenceSettings(AppSettings):
    """Declared here once; values come from Django settings or the environment."""

    INTELLIGENCE_ATTRIBUTION_AUTO = Tunable(
        0.85,
        minimum=0.5,
        maximum=1.0,
        doc="attribution score at or above which a document's project is set without review",
    )
    INTELLIGENCE_ATTRIBUTION_CANDIDATE = Tunable(
        0.3,
        minimum=0.0,
        maximum=1.0,
        doc="attribution score at or above which (and below the auto threshold) a candidate is queued for review",
    )
    INTELLIGENCE_STALE_DAYS = Tunable(
        21, minimum=1, maximum=3650, doc="days without new evidence after which a card counts as stale in packets"
    )
    INTELLIGENCE_PACKET_MAX_CARDS = Tunable(60, minimum=1, maximum=1000, doc="cards one packet holds at most")
    INTELLIGENCE_JOB_MAX_ATTEMPTS = Tunable(
        5, minimum=1, maximum=50, doc="attempts of a compiler job before it stays failed"
    )
    INTELLIGENCE_JOB_SWEEP_AFTER_SECONDS = Tunable(
        120,
        minimum=0,
        maximum=86_400,
        doc="a queued compiler or packet job this old is queued again by the sweep (its task was lost)",
    )

    # Compilation (intelligence/services/extraction.py and compile.py).
    INTELLIGENCE_EXTRACTOR = Tunable(
        "auto",
        doc='signal extractor: "local", "openai", or "auto" (openai when OPENAI_API_KEY is set, as the analyzer)',
    )
    INTELLIGENCE_EXTRACTOR_MODEL = Tunable("", doc="model of the OpenAI extractor (empty: ANALYZER_MODEL)")
    INTELLIGENCE_SIGNAL_MIN_CONFIDENCE = Tunable(
        0.5, minimum=0.0, maximum=1.0, doc="confidence below which an extracted signal is discarded, never a card"
    )
    INTELLIGENCE_CARD_SIMILARITY = Tunable(
        0.8,
        minimum=0.5,
        maximum=1.0,
        doc="content-word similarity (Dice) at which a signal updates an existing card of its target and type "
        "instead of making another",
    )
    INTELLIGENCE_CARD_EMBEDDINGS = Tunable(
        False, doc="compare a signal with existing cards by sentence embeddings instead of content words"
    )
    INTELLIGENCE_CARD_EMBEDDING_SIMILARITY = Tunable(
        0.7,
        minimum=0.5,
        maximum=1.0,
        doc="cosine similarity of sentence embeddings at which a signal updates an existing card "
        "(with INTELLIGENCE_CARD_EMBEDDINGS)",
    )
    INTELLIGENCE_RESOLVE_OVERLAP = Tunable(
        0.6,
        minimum=0.3,
        maximum=1.0,
        doc="share of an open question's or blocker's content words a resolving decision or update must repeat",
    )


intelligence_settings = IntelligenceSettings()
