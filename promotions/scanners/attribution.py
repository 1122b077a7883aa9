"""The attribution scanner: a recurring pattern in reviewers' attribution decisions becomes a
candidate attribution rule (``attribution_rule`` promotions).

A reviewer who approves or corrects a candidate says "this document belongs to project P". When
the same phrase (a team's nickname for the job), folder, participant or sender domain occurs in at
least ATTRIBUTION_SCAN_MIN_CORRECTIONS such documents of one project, in none of another, and in
(nearly) no document attributed to another project, it is proposed as a rule for that project. A
phrase every project's documents use ("concrete pour", a shared consultant) has competing support
and is never proposed: learn nothing rather than the wrong thing.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.utils import timezone

from accounts.actors import Actor
from feedback.models import EventFamily, FeedbackEvent, Signal
from intelligence.matching import (
    PUBLIC_DOMAINS,
    DocumentFeatures,
    contains_phrase,
    document_features,
    ngrams,
    norm,
)
from intelligence.models import AttributionRule, IntelligenceTarget, RuleStatus, TargetKind
from intelligence.services.attribution import RuleProfile, rule_matches
from intelligence.services.targets import PROFILE_FIELDS
from promotions.conf import promotions_settings
from promotions.models import LearningPromotion, PromotionStatus
from promotions.services import Proposal, promotions_propose_bulk
from retrieval.models import Document

SUBJECT_TYPE = "attribution_pattern"
MIN_PHRASE_CHARS = 4


@dataclass
class AttributionScanReport:
    decisions: int = 0
    patterns: int = 0  # seen in enough decisions of one project
    competing: int = 0  # refused: another project has similar support
    proposed: int = 0


def _features(document: Document) -> DocumentFeatures:
    return document_features(
        title=document.title,
        raw_text=document.raw_text,
        url=document.url,
        participants=document.participants,
        metadata=document.metadata,
        source_system=document.source_system,
    )


def _patterns(document: Document, features: DocumentFeatures) -> set[tuple[str, str]]:
    """The (match_kind, pattern) pairs a document offers a rule."""
    phrases = ngrams(f"{document.title}\n{document.raw_text}")
    # A number recurs by coincidence ("payment application 13" in three reviewed documents): job
    # numbers belong in the profile, not in a learned phrase.
    found = {("alias", g) for g in phrases if len(g) >= MIN_PHRASE_CHARS and not any(w.isdigit() for w in g.split())}
    found |= {("path", folder) for folder in features.paths if folder.count("/") >= 2}
    found |= {("participant", person) for person in features.participants if "@" in person}
    found |= {("domain", domain) for domain in features.domains if domain not in PUBLIC_DOMAINS}
    return found


def _generic(kind: str, pattern: str) -> bool:
    """A pattern that could match documents of anything: a proposal a person must weigh (medium risk)."""
    if kind == "alias":
        return " " not in pattern and len(pattern) < 5
    if kind == "path":
        return pattern.count("/") < 3
    return False


def attribution_scan(*, actor: Actor | None = None) -> AttributionScanReport:
    """Propose attribution rules from recurring patterns in recent reviewed attributions."""
    actor = actor or Actor.for_system()
    conf = promotions_settings
    since = timezone.now() - timedelta(days=conf.ATTRIBUTION_SCAN_DAYS)
    decisions: dict[str, tuple[int, str, str]] = {}  # document -> (project, target, event), latest wins
    for event_id, project_id, target_id, document_id in (
        FeedbackEvent.objects.filter(
            event_family=EventFamily.ATTRIBUTION,
            event_type="attribution_review",
            signal__in=[Signal.ACCEPTED, Signal.CORRECTED],
            created_at__gte=since,
            project__isnull=False,
        )
        .order_by("created_at")
        .values_list("pk", "project_id", "target_id", "source_record_id")
    ):
        decisions[document_id] = (project_id, target_id, str(event_id))
    report = AttributionScanReport(decisions=len(decisions))
    if not decisions:
        return report
    documents = {d.pk: d for d in Document.objects.filter(pk__in=list(decisions))}
    # pattern -> project -> reviewed documents
    support: dict[tuple[str, str], dict[int, set[str]]] = defaultdict(lambda: defaultdict(set))
    for document_id, (project_id, _, _) in decisions.items():
        document = documents.get(document_id)
        if document is None or document.project_id != project_id:
            continue  # gone, or decided otherwise since
        for key in _patterns(document, _features(document)):
            support[key][project_id].add(document_id)
    floor = conf.ATTRIBUTION_SCAN_MIN_CORRECTIONS
    recurring: list[tuple[tuple[str, str], int]] = []
    for key, by_project in support.items():
        best = max(by_project, key=lambda p: len(by_project[p]))
        if len(by_project[best]) < floor:
            continue
        report.patterns += 1
        if len(by_project) > 1:  # reviewers put it in two projects: not a clear pattern
            report.competing += 1
            continue
        recurring.append((key, best))
    if not recurring:
        return report
    known = _known(recurring)
    attributed = list(
        Document.objects.filter(project__isnull=False)
        .order_by("-imported_at")
        .only("pk", "project_id", "title", "raw_text", "url", "participants", "metadata", "source_system")[
            : conf.ATTRIBUTION_SCAN_MAX_DOCUMENTS
        ]
    )
    features = [(d.project_id or 0, _features(d)) for d in attributed]
    proposals: list[tuple[float, Proposal]] = []
    targets = {
        t.project_id: t
        for t in IntelligenceTarget.objects.filter(
            project_id__in={p for _, p in recurring}, kind=TargetKind.PROJECT, active=True
        ).select_related("project")
    }
    for (kind, pattern), project_id in recurring:
        target = targets.get(project_id)
        if target is None:
            continue
        probe = RuleProfile(0, target.pk, project_id, kind, pattern)
        counts: dict[int, int] = defaultdict(int)
        for owner, feature in features:
            if rule_matches(probe, feature):
                counts[owner] += 1
        own = counts.pop(project_id, 0)
        rival = max(counts.values(), default=0)
        if rival > conf.ATTRIBUTION_SCAN_MAX_COMPETING * max(own, 1):
            report.competing += 1
            continue
        reviewed = sorted(support[(kind, pattern)][project_id])
        confidence = round(min(0.99, (own + 1) / (own + rival + 2)), 3)
        proposals.append(
            (
                len(reviewed) + own / 1000,
                Proposal(
                    subject_id=f"{kind}:{pattern}"[:255],
                    target=target,
                    proposed_learning={
                        "match_kind": kind,
                        "pattern": pattern,
                        "target_id": target.pk,
                        "target": f"{target.project.slug}/{target.slug}",
                        "reviewed_documents": reviewed[:20],
                        "support": {"reviewed": len(reviewed), "attributed": own, "best_other_project": rival},
                        "evidence": [
                            {"kind": kind, "value": pattern, "document": document_id} for document_id in reviewed[:10]
                        ],
                    },
                    confidence=confidence,
                    risk_level="medium" if _generic(kind, pattern) else "low",
                    project=target.project,
                    source_event_ids=[decisions[d][2] for d in reviewed[:50]],
                ),
            )
        )
    proposals.sort(key=lambda item: -item[0])
    chosen = _maximal([p for _, p in proposals], known)[: conf.ATTRIBUTION_SCAN_MAX_PROPOSALS]
    opened = promotions_propose_bulk(
        actor=actor, promotion_type="attribution_rule", subject_type=SUBJECT_TYPE, proposals=chosen
    )
    report.proposed = len(opened)
    return report


def _known(recurring: list[tuple[tuple[str, str], int]]) -> set[tuple[str, str]]:
    """The patterns that are already a rule, behind any promotion, or in the project's profile."""
    subjects = {f"{kind}:{pattern}"[:255] for (kind, pattern), _ in recurring}
    behind = set(
        LearningPromotion.objects.filter(
            promotion_type="attribution_rule", subject_type=SUBJECT_TYPE, subject_id__in=subjects
        )
        .exclude(status=PromotionStatus.EXPIRED)
        .values_list("subject_id", flat=True)
    )
    ruled = set(AttributionRule.objects.filter(status=RuleStatus.ACTIVE).values_list("match_kind", "pattern"))
    profile: dict[int, set[str]] = defaultdict(set)
    for project_id, *lists in IntelligenceTarget.objects.filter(
        project_id__in={p for _, p in recurring}, active=True
    ).values_list("project_id", *PROFILE_FIELDS, "name"):
        for values in [*lists[:-1], [lists[-1]]]:
            profile[project_id] |= {norm(str(value)) for value in values or []} - {""}

    known = set()
    for (kind, pattern), project_id in recurring:
        if f"{kind}:{pattern}"[:255] in behind or (kind, pattern) in ruled:
            known.add((kind, pattern))
        elif kind == "alias" and any(
            contains_phrase(pattern, name) or contains_phrase(name, pattern) for name in profile[project_id]
        ):
            known.add((kind, pattern))  # the profile's names say it already (or the phrase is a piece of one)
    return known


def _maximal(proposals: list[Proposal], known: set[tuple[str, str]]) -> list[Proposal]:
    """Phrases reviewed in exactly the same documents ("the dig", "dig flooded") would be the same
    rule several times: keep one per document set, the one most attributed documents share (then
    the one of more words, the safer), in the order given; none for a set one of whose patterns is
    known already (a rule, a promotion, the profile)."""
    best: dict[tuple[str, frozenset[str]], Proposal] = {}
    order: list[tuple[str, frozenset[str]]] = []
    covered: set[tuple[str, frozenset[str]]] = set()

    def rank(proposal: Proposal) -> tuple[int, int]:
        learning: dict[str, Any] = proposal.proposed_learning
        return learning["support"]["attributed"], len(learning["pattern"].split())

    for proposal in proposals:
        learning = proposal.proposed_learning
        key = (learning["match_kind"], frozenset(learning["reviewed_documents"]))
        if (learning["match_kind"], learning["pattern"]) in known:
            covered.add(key)
            continue
        if key not in best:
            order.append(key)
            best[key] = proposal
        elif rank(proposal) > rank(best[key]):
            best[key] = proposal
    return [best[key] for key in order if key not in covered]
