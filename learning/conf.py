"""The learning app's tunables, typed and range-checked (see ``core.conf``).

Each is read as ``learning_settings.NAME``; a value comes from Django settings, else the
environment variable of the same name, else the default written here. The analyzer's model and
the OpenAI client's timeout and retries stay in ``config.settings``: the embedding client in
``core`` reads them too.
"""

from __future__ import annotations

from core.conf import AppSettings, Tunable


class LearningSettings(AppSettings):
    """Declared here once; values come from Django settings or the environment."""

    REGGIE_PREFERENCE_LEARNING = Tunable(
        True, doc="Preference learning on: off, messages are stored unanalysed and contexts are empty."
    )
    MESSAGE_MAX_CHARS = Tunable(
        32_000, minimum=1, maximum=1_000_000, doc="Longest chat message accepted, in characters."
    )
    PROMPT_WINDOW = Tunable(
        100, minimum=1, maximum=10_000, doc="Newest prompt patterns kept per user for workflow detection."
    )

    # Context assembly.
    CONTEXT_MAX_CHARS = Tunable(2000, minimum=100, maximum=100_000, doc="The context budget: longest rendered block.")
    CONTEXT_CACHE_SECONDS = Tunable(
        300,
        minimum=1,
        maximum=86_400,
        doc="Cached context ingredients live at most this long (writes invalidate them at once).",
    )
    CONTEXT_MAX_PREFERENCES = Tunable(12, minimum=0, maximum=100, doc="Preferences injected into a context at most.")
    CONTEXT_MAX_MEMORIES = Tunable(
        5, minimum=0, maximum=100, doc="Memories injected into a context at most (private, then shared)."
    )
    CONTEXT_MAX_TASTE_PATTERNS = Tunable(
        5, minimum=0, maximum=100, doc="Taste patterns injected into a context at most."
    )
    CONTEXT_MAX_AGENT_LEARNINGS = Tunable(
        5, minimum=0, maximum=100, doc="Agent learnings injected into a context at most."
    )
    CONTEXT_MAX_TASK_EXAMPLES = Tunable(
        3, minimum=0, maximum=20, doc="Approved task examples injected for task generation at most."
    )
    CONTEXT_MAX_PACKET_CARDS = Tunable(
        5, minimum=0, maximum=20, doc="Cards of the target's packet (one excerpt each) shown to task generation."
    )

    # Workflows.
    WORKFLOW_CONTEXT_MIN_SIMILARITY = Tunable(
        0.3,
        minimum=0.0,
        maximum=1.0,
        doc="Word overlap a message needs with a workflow's trigger or example to inject it.",
    )

    # Open-set preferences.
    PREFERENCE_SAME_SIMILARITY = Tunable(
        0.77,
        minimum=0.0,
        maximum=1.0,
        doc="Two preference descriptions are one preference (a reinforcement) at this embedding similarity or "
        "above. From the labelled set's paraphrase families: the closest different preferences with the same "
        "polarity ('Give temperatures in Celsius.' / 'in Fahrenheit.') are at 0.76.",
    )
    PREFERENCE_MIN_CONFIDENCE = Tunable(
        0.5,
        minimum=0.0,
        maximum=1.0,
        doc="A learned preference below this confidence is kept as a candidate: listed, never injected.",
    )

    # Reinforcement and decay of learned preferences.
    REINFORCEMENT_RATE = Tunable(
        0.3, minimum=0.0, maximum=1.0, doc="Each re-detection closes this share of the gap between confidence and 1.0."
    )
    PREFERENCE_DECAY_AFTER_DAYS = Tunable(
        30,
        minimum=1,
        maximum=3650,
        doc="Preferences not reinforced for this long lose confidence at each run of the decay task.",
    )
    PREFERENCE_DECAY_FACTOR = Tunable(
        0.9, minimum=0.0, maximum=1.0, doc="Confidence is multiplied by this at each decay."
    )
    PREFERENCE_DECAY_FLOOR = Tunable(
        0.3,
        minimum=0.0,
        maximum=1.0,
        doc="Below this confidence a decayed preference goes inactive and is offered for a check-in.",
    )

    # Analysis in the worker.
    ANALYSIS_PUBLISH_BREAKER_SECONDS = Tunable(
        5.0,
        minimum=0.0,
        maximum=300.0,
        doc="After a failed publish of an analysis task, how long a web process stores messages without "
        "trying the broker again (0: try every time); the worker's sweep on reconnect queues them.",
    )
    ANALYSIS_SWEEP_AFTER_SECONDS = Tunable(
        60,
        minimum=1,
        maximum=86_400,
        doc="Messages whose analysis was never enqueued (broker down) are swept up after this long.",
    )
    ANALYSIS_BATCH_SIZE = Tunable(
        32,
        minimum=1,
        maximum=1000,
        doc="A worker analyses up to this many waiting messages per task (one embedding pass).",
    )
    ANALYSIS_CLAIM_SECONDS = Tunable(
        120, minimum=1, maximum=86_400, doc="How long a worker holds its claim on the messages of its batch."
    )
    ANALYSIS_MAX_ATTEMPTS = Tunable(
        3,
        minimum=1,
        maximum=100,
        doc="An analysis that failed this many times is given up: the message is marked analysed with the error "
        "and an eval_failure event, so it never holds back the queue.",
    )

    # Taste learning.
    TASTE_MIN_OBSERVATIONS = Tunable(
        3,
        minimum=1,
        maximum=100,
        doc="A direction seen this often in the last TASTE_WINDOW decisions becomes a candidate pattern.",
    )
    TASTE_WINDOW = Tunable(
        20, minimum=1, maximum=1000, doc="Recent decisions on one plugin/command read for a pattern."
    )
    TASTE_MAJORITY_SHARE = Tunable(
        0.7,
        minimum=0.51,  # above half: two opposite directions can never both hold a dimension
        maximum=1.0,
        doc="A direction needs this share of the recent corrections on its dimension (shorter vs longer...).",
    )
    TASTE_DIMENSION_WINDOW = Tunable(
        6,
        minimum=1,
        maximum=1000,
        doc="The latest corrections on one dimension that the majority is taken over (recent ones outvote old).",
    )
    TASTE_PLUGIN_MIN_COMMANDS = Tunable(
        3,
        minimum=2,
        maximum=100,
        doc="Commands of one plugin corrected the same way (none the other way) for a plugin-wide pattern.",
    )
    TASTE_CONFIRMATIONS_TO_ACTIVATE = Tunable(
        2, minimum=1, maximum=100, doc="Confirmations that make a candidate pattern active."
    )
    TASTE_REJECTIONS_TO_STOP = Tunable(
        3, minimum=1, maximum=100, doc="Overrides in a row that stop (reject) a pattern."
    )
    COMMAND_OUTPUT_MAX_CHARS = Tunable(
        20_000,
        minimum=1,
        maximum=1_000_000,
        doc="A tool's output as reported (a run's output, an edited output), in characters.",
    )

    # Undo in the preferences panel.
    LEARNING_UNDO_SECONDS = Tunable(
        600,
        minimum=10,
        maximum=86_400,
        doc="How long a user's change to a learned item (switched off, edited, deleted, stopped, resumed) can be "
        "undone; after it the undo entry, and with it what a deleted item held, is purged.",
    )

    # Sharing.
    MEMORY_SHARE_MIN_CONFIDENCE = Tunable(
        0.7, minimum=0.0, maximum=1.0, doc="A private memory or preference below this confidence is never shared."
    )


learning_settings = LearningSettings()
