"""HTTP API of the promotion scans (staff admins): queue a scan, follow its runs."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response

from config.api import (
    ChoiceField,
    NewestFirstCursorPagination,
    StrictInputSerializer,
    filterset_parameters,
    paginated_list,
)
from promotions import scans, selectors
from promotions.apis.promotions import StaffApi, admin_actor
from promotions.filters import ScanRunFilter
from promotions.models import Scanner


class RetrievalScanOutputSerializer(serializers.Serializer):
    groups = serializers.IntegerField(
        help_text="(Chunk, query neighbourhood) pairs with enough effective evidence to judge."
    )
    boosts = serializers.IntegerField(help_text="New boost candidates.")
    penalties = serializers.IntegerField(help_text="New penalty candidates.")
    skipped_open = serializers.IntegerField(help_text="Chunks that already have an open candidate.")
    skipped_decided = serializers.IntegerField(
        help_text="Changes already applied or paused, or rejected on as much evidence (RETRIEVAL_SCAN_RENEWAL)."
    )
    already_first = serializers.IntegerField(
        required=False, help_text="Boosts not proposed: the chunk is already at rank 1 for those queries."
    )
    propensity = serializers.DictField(
        required=False,
        help_text="The position-bias model used: eta of p(rank) = (1/rank)^eta, its source (exploration or "
        "prior) and the explored results with feedback behind it.",
    )
    rollups = serializers.DictField(
        required=False,
        help_text="The incremental aggregation: trace rows new, re-counted and expired; rollups written.",
    )


class AgentScanOutputSerializer(serializers.Serializer):
    thumbs_down = serializers.IntegerField(help_text="Recent thumbs-down not yet behind a promotion.")
    groups = serializers.IntegerField(help_text="Groups of similar responses with enough support.")
    proposed = serializers.IntegerField(help_text="New agent-learning candidates.")
    flagged = serializers.IntegerField(help_text="Reasons that try to steer the assistant: flagged, not used.")
    one_off = serializers.IntegerField(required=False, help_text="Candidates opened from a single thumbs-down.")
    reinforced = serializers.IntegerField(required=False, help_text="Open candidates given new similar evidence.")
    applied = serializers.IntegerField(required=False, help_text="Low-risk repeated failures applied automatically.")
    waiting = serializers.IntegerField(required=False, help_text="Repeated failures not low risk: a person decides.")


class PathScanOutputSerializer(serializers.Serializer):
    """The report of a scanner of an automatic path (tool failures, task ratings, workflow outcomes,
    eval failures): what it read, then what it proposed, reinforced, applied or left waiting."""

    failed_runs = serializers.IntegerField(required=False, help_text="Failed tool runs read.")
    bad_ratings = serializers.IntegerField(required=False, help_text="Bad task ratings with a reason read.")
    outcomes = serializers.IntegerField(required=False, help_text="Reported workflow outcomes of rated tasks.")
    tasks = serializers.IntegerField(required=False, help_text="Rated tasks with outcomes.")
    high_confidence = serializers.IntegerField(required=False, help_text="Tasks with high-confidence outcomes.")
    not_eligible = serializers.IntegerField(required=False, help_text="High confidence, but not an example.")
    failures = serializers.IntegerField(required=False, help_text="Eval failures read.")
    unmapped = serializers.IntegerField(required=False, help_text="Eval failures that map to no prevention rule.")
    flagged = serializers.IntegerField(required=False, help_text="Text that tries to steer: never a prompt.")
    groups = serializers.IntegerField(required=False, help_text="Groups of the same failure.")
    proposed = serializers.IntegerField(help_text="New candidates.")
    reinforced = serializers.IntegerField(help_text="Open candidates given new evidence.")
    applied = serializers.IntegerField(help_text="Low risk: approved and applied automatically.")
    waiting = serializers.IntegerField(help_text="Automatic path, but not low risk: a person decides.")


class TaskExampleScanOutputSerializer(serializers.Serializer):
    eligible = serializers.IntegerField(help_text="Completed tasks rated good, not examples yet.")
    proposed = serializers.IntegerField(help_text="New task-example candidates.")


class PacketRuleScanOutputSerializer(serializers.Serializer):
    card_marks = serializers.IntegerField(help_text="Recent card marks (useful, wrong, stale) not behind a promotion.")
    summary_edits = serializers.IntegerField(help_text="Recent edits of owner-facing summaries read.")
    groups = serializers.IntegerField(help_text="Consistent patterns found (card feedback, edits, coverage).")
    proposed = serializers.IntegerField(help_text="New packet-rule candidates.")


class ScanReportSerializer(serializers.Serializer):
    """Each finished scanner's report, by name."""

    retrieval = RetrievalScanOutputSerializer(required=False)
    agent_learning = AgentScanOutputSerializer(required=False)
    task_example = TaskExampleScanOutputSerializer(required=False)
    packet_rule = PacketRuleScanOutputSerializer(required=False)
    tool_failure = PathScanOutputSerializer(required=False)
    task_rating = PathScanOutputSerializer(required=False)
    workflow_outcome = PathScanOutputSerializer(required=False)
    eval_failure = PathScanOutputSerializer(required=False)


class ScanInputSerializer(StrictInputSerializer):
    scanner = ChoiceField(choices=Scanner.values, default=Scanner.ALL)


class ScanRunOutputSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    scanner = serializers.CharField()
    status = serializers.CharField(help_text="queued, running, succeeded or failed")
    requested_by = serializers.CharField(
        source="requested_by.username", allow_null=True, help_text="null: the schedule"
    )
    current = serializers.CharField(help_text="The scanner running now (while running).")
    step = serializers.IntegerField(help_text="Scanners finished so far.")
    total = serializers.IntegerField(help_text="Scanners this run runs.")
    report = ScanReportSerializer(help_text="Each finished scanner's report (so far, while running).")
    error = serializers.CharField(help_text="Why the run failed.")
    created_at = serializers.DateTimeField()
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)


class PromotionScanApi(StaffApi):
    @extend_schema(
        request=ScanInputSerializer,
        responses={202: ScanRunOutputSerializer},
        summary="Queue a scan (or get the open run of that scanner); follow it at /promotions/scans/<id>",
        description="Scans run in the worker, never in the request: the answer is the run, `queued` (or the "
        "open run of that scanner, if one is queued or running). Without a broker (the demo) it ran when the "
        "request committed, so the answer already carries its report.",
    )
    def post(self, request: Request) -> Response:
        actor = admin_actor(request)
        serializer = ScanInputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        run, _ = scans.scan_run_request(actor=actor, scanner=serializer.validated_data["scanner"])
        return Response(ScanRunOutputSerializer(run).data, status=status.HTTP_202_ACCEPTED)


class ScanRunListApi(StaffApi):
    pagination_class = NewestFirstCursorPagination

    @extend_schema(
        parameters=filterset_parameters(ScanRunFilter),
        responses=ScanRunOutputSerializer(many=True),
        summary="Scan runs, latest first",
        description="Requested and scheduled runs, with their status and, once finished, each scanner's report.",
    )
    def get(self, request: Request) -> Response:
        return paginated_list(
            request=request,
            view=self,
            queryset=selectors.scan_run_list(actor=admin_actor(request)),
            filterset_class=ScanRunFilter,
            output_serializer=ScanRunOutputSerializer,
        )


class ScanRunDetailApi(StaffApi):
    @extend_schema(
        responses=ScanRunOutputSerializer,
        summary="One scan run: its progress, then its report",
        description="Poll it: `status` goes queued, running (`current` scanner, `step` of `total`), then "
        "succeeded with `report` or failed with `error`.",
    )
    def get(self, request: Request, scan_run_id: str) -> Response:
        run = selectors.scan_run_get(actor=admin_actor(request), scan_run_id=scan_run_id)
        if run is None:
            raise NotFound("No such scan run.")
        return Response(ScanRunOutputSerializer(run).data)
