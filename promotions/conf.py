"""The promotions app's tunables, typed and range-checked (see ``core.conf``)."""

from __future__ import annotations

from core.conf import AppSettings, Tunable


class PromotionsSettings(AppSettings):
    """Declared here once; values come from Django settings or the environment."""

    # The retrieval scan (promotions/scanners/retrieval.py): evidence from the last RETRIEVAL_SCAN_DAYS,
    # read from the trace rollups; relevance per chunk and query neighbourhood estimated with a
    # position-bias model and compared with the neighbourhood's baseline.
    RETRIEVAL_SCAN_DAYS = Tunable(90, minimum=1, maximum=3650, doc="days of search traces the retrieval scan reads")
    # 1: at five searches of a question a relevant result below the top 3 is rarely used twice, and the
    # posterior (RETRIEVAL_SCAN_CONFIDENCE) is what should decide; measured in the README (2 -> 1, 2026-12-07).
    RETRIEVAL_SCAN_MIN_SUPPORT = Tunable(
        1, minimum=1, maximum=1000, doc="uses (a boost) or skips and explicit non-uses (a penalty) a weight needs"
    )
    # Stale and wrong-project marks are explicit reports judged on their own (no position model):
    # their floor stays where it was when the click-evidence floors were lowered for more traffic.
    RETRIEVAL_SCAN_MIN_PROBLEM_MARKS = Tunable(
        3, minimum=1, maximum=1000, doc="stale (or wrong-project) marks a chunk needs before it is penalised for them"
    )
    RETRIEVAL_SCAN_MIN_EFFECTIVE = Tunable(
        1.0, minimum=0.5, maximum=10_000.0, doc="expected examinations a chunk needs in a neighbourhood to be judged"
    )
    RETRIEVAL_SCAN_RENEWAL = Tunable(
        2.0,
        minimum=1.0,
        maximum=100.0,
        doc="times the examinations behind a rejected weight a chunk needs before the same change is proposed again",
    )
    RETRIEVAL_SCAN_CONFIDENCE = Tunable(
        0.9,
        minimum=0.5,
        maximum=0.9999,
        doc="posterior probability a boost (or penalty) needs that the chunk beats (or trails) its baseline",
    )
    RETRIEVAL_SCAN_PRIOR_GROUPS = Tunable(
        20.0,
        minimum=0.0,
        maximum=100_000.0,
        doc="groups a uniform prior counts for, blended into the fitted relevance prior (a small window stays open)",
    )
    RETRIEVAL_SCAN_EXPLICIT_WEIGHT = Tunable(
        2.0, minimum=1.0, maximum=20.0, doc="examinations one explicit outcome counts for (a click counts 1)"
    )
    RETRIEVAL_SCAN_MIN_PROPENSITY = Tunable(
        0.1, minimum=0.01, maximum=1.0, doc="floor of the examination propensity (clipping) of any rank"
    )
    RETRIEVAL_SCAN_PRIOR_ETA = Tunable(
        1.0, minimum=0.0, maximum=3.0, doc="position bias p(r) = (1/r)^eta assumed when exploration is too sparse"
    )
    RETRIEVAL_SCAN_PRIOR_ETA_SD = Tunable(
        0.5, minimum=0.01, maximum=10.0, doc="standard deviation of the normal prior on eta (explored clicks update it)"
    )
    RETRIEVAL_SCAN_PRIOR = Tunable(
        5.0, minimum=0.0, maximum=1000.0, doc="examinations shrinking a neighbourhood's baseline toward the global one"
    )
    RETRIEVAL_SCAN_MIN_LIFT = Tunable(
        1.1, minimum=1.0, maximum=10.0, doc="lower bound / baseline a boost needs (baseline / upper bound a penalty)"
    )
    RETRIEVAL_SCAN_SETTLE_SECONDS = Tunable(
        300, minimum=0, maximum=86_400, doc="seconds after which a trace row is surely committed (rollup watermark)"
    )
    # The scan keeps its judgements and re-judges only the neighbourhoods whose rollups changed, under
    # the propensity, global rate and relevance prior of the last full judgement, until a fresh fit of
    # those has moved by more than this (eta and its spread by this much, the prior's CDF anywhere by
    # this much, the global rate by this share): then it re-judges everything. 0: on any movement.
    RETRIEVAL_SCAN_REJUDGE_TOLERANCE = Tunable(
        0.01,
        minimum=0.0,
        maximum=0.5,
        doc="movement of the fitted eta, relevance prior or global rate that makes the scan re-judge everything",
    )
    # A query-scoped weight never reaches queries less similar than this to its evidence.
    RETRIEVAL_SCAN_MIN_NEIGHBOURHOOD = Tunable(
        0.85, minimum=0.5, maximum=1.0, doc="similarity a query needs to an anchor of a query-scoped weight"
    )
    RETRIEVAL_SCAN_MAX_ANCHORS = Tunable(
        20, minimum=1, maximum=200, doc="distinct queries kept as the anchors of one query-scoped weight"
    )
    # Agent learnings: thumbs-down on this many responses this similar (embedding of response and
    # reason) within the window become one candidate prevention prompt.
    AGENT_SCAN_MIN_SUPPORT = Tunable(2, minimum=1, maximum=1000, doc="distinct responses a prevention prompt needs")
    AGENT_SCAN_SIMILARITY = Tunable(
        0.7, minimum=0.0, maximum=1.0, doc="embedding similarity at which two thumbs-down are grouped"
    )
    AGENT_SCAN_DAYS = Tunable(30, minimum=1, maximum=3650, doc="days of thumbs-down the agent-learning scan reads")
    AGENT_SCAN_MAX_EVENTS = Tunable(
        5000, minimum=1, maximum=100_000, doc="newest thumbs-down embedded by one agent-learning scan"
    )
    TASK_EXAMPLE_SCAN_MAX_TASKS = Tunable(
        500, minimum=1, maximum=100_000, doc="well-rated tasks the task-example scan considers per run"
    )
    # The packet-rule scan (promotions/scanners/packet_rule.py): consistent card feedback, summary edits
    # and coverage gaps within the window become packet-rule candidates.
    PACKET_RULE_SCAN_DAYS = Tunable(
        30, minimum=1, maximum=3650, doc="days of packet feedback the packet-rule scan reads"
    )
    PACKET_RULE_SCAN_MIN_SUPPORT = Tunable(
        3, minimum=2, maximum=1000, doc="marks (or summary edits) of one kind a packet rule needs at least"
    )
    PACKET_RULE_SCAN_MIN_CARDS = Tunable(2, minimum=1, maximum=1000, doc="distinct cards those marks must be about")
    PACKET_RULE_SCAN_MIN_SHARE = Tunable(
        0.75, minimum=0.5, maximum=1.0, doc="share of a card type's marks (or of the edits of a pair) that must agree"
    )
    PACKET_RULE_SCAN_MAX_EVENTS = Tunable(
        20_000, minimum=1, maximum=1_000_000, doc="newest packet-quality events one packet-rule scan reads"
    )
    PACKET_RULE_SCAN_MAX_PACKETS = Tunable(
        1000, minimum=1, maximum=100_000, doc="current packets whose coverage one packet-rule scan reads"
    )
    # Attribution rules (promotions/scanners/attribution.py): a phrase, folder, participant or sender
    # domain seen in this many reviewed attributions to one project, and (nearly) nowhere else.
    ATTRIBUTION_SCAN_MIN_CORRECTIONS = Tunable(
        3, minimum=2, maximum=1000, doc="reviewed attributions to one project a pattern needs to become a rule"
    )
    ATTRIBUTION_SCAN_MAX_COMPETING = Tunable(
        0.05,
        minimum=0.0,
        maximum=0.5,
        doc="largest share of the pattern's attributed documents another single project may hold",
    )
    ATTRIBUTION_SCAN_DAYS = Tunable(180, minimum=1, maximum=3650, doc="days of attribution reviews the scan reads")
    ATTRIBUTION_SCAN_MAX_DOCUMENTS = Tunable(
        20_000, minimum=100, maximum=1_000_000, doc="attributed documents read for the competing support of patterns"
    )
    ATTRIBUTION_SCAN_MAX_PROPOSALS = Tunable(
        20, minimum=1, maximum=1000, doc="attribution-rule candidates one scan opens at most"
    )
    # Candidates expire unless someone decides within this many days (promotions_expire runs daily).
    CANDIDATE_EXPIRY_DAYS = Tunable(
        30, minimum=1, maximum=3650, doc="days a candidate waits for a decision before it expires"
    )
    # Repeated tool failures: failed runs of one tool whose error signatures are this similar.
    TOOL_FAILURE_MIN_SUPPORT = Tunable(2, minimum=2, maximum=1000, doc="failed runs a repeated tool failure needs")
    TOOL_FAILURE_SIMILARITY = Tunable(
        0.6, minimum=0.0, maximum=1.0, doc="error-signature similarity at which two failed runs are the same failure"
    )
    TOOL_FAILURE_DAYS = Tunable(30, minimum=1, maximum=3650, doc="days of failed tool runs the scan reads")
    # Bad task ratings: a reason this similar to an open candidate's evidence reinforces it.
    TASK_RATING_SIMILARITY = Tunable(
        0.6, minimum=0.0, maximum=1.0, doc="similarity at which a bad task rating reinforces a candidate"
    )
    TASK_RATING_DAYS = Tunable(30, minimum=1, maximum=3650, doc="days of bad task ratings the scan reads")
    # Workflow outcomes: a rated task whose outcomes succeed with a Wilson lower bound of at least this
    # (at WORKFLOW_OUTCOME_Z) is a high-confidence outcome. 0.6 at z 1.28: three successes and no failure.
    WORKFLOW_OUTCOME_MIN_CONFIDENCE = Tunable(
        0.6, minimum=0.0, maximum=1.0, doc="lower bound of the success share a high-confidence workflow outcome needs"
    )
    WORKFLOW_OUTCOME_Z = Tunable(1.28, minimum=0.0, maximum=5.0, doc="z of the workflow-outcome confidence bound")
    WORKFLOW_OUTCOME_DAYS = Tunable(90, minimum=1, maximum=3650, doc="days of workflow outcomes the scan reads")
    EVAL_FAILURE_DAYS = Tunable(30, minimum=1, maximum=3650, doc="days of eval failures the scan reads")
    # A scan run that is still queued or running after this long was lost (its worker died, its
    # message never arrived): it is marked failed, so a new scan of that kind can be queued.
    SCAN_RUN_STALE_SECONDS = Tunable(
        1800, minimum=60, maximum=7 * 24 * 3600, doc="seconds after which an unfinished scan run counts as lost"
    )


promotions_settings = PromotionsSettings()
