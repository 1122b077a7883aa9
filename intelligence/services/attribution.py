"""Attribution of documents to projects (and the named scopes inside them), on import.

Each active target's profile (aliases, client names, addresses, people, explicit ids) and the
active attribution rules are matched against a document's metadata and text; the earlier
attributions of its thread, folder and subject count as context. Every match is evidence
``{kind, value, weight}``: weights are log-odds, summed per project, people and names shared by
several projects weighed down (IDF over the profiles). The score of the best project is its share
of a softmax over the projects with evidence plus a "none of them" prior, so two projects with the
same evidence score at most one half each: the margin over the competition is part of the score.

At or above INTELLIGENCE_ATTRIBUTION_AUTO the document's project is set (``attribution/accepted``);
at or above INTELLIGENCE_ATTRIBUTION_CANDIDATE a reviewer decides (a candidate, and an
``attribution/needs_review`` event). A document that has a project (imported with one, or decided)
is never attributed again here.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction
from django.db.models import Q

from accounts.actors import Actor
from accounts.models import Project
from feedback.models import EventFamily, Signal
from feedback.services.events import EventInput, event_record
from intelligence.conf import intelligence_settings
from intelligence.matching import (
    PATH_KEYS,
    THREAD_KEYS,
    DocumentFeatures,
    compact,
    contains_phrase,
    document_features,
    norm,
    participant_keys,
    subject_core,
)
from intelligence.models import (
    AttributionRule,
    AttributionStatus,
    DocumentAttributionCandidate,
    IntelligenceTarget,
    RuleStatus,
    SourceIntelligenceJob,
    TargetKind,
)
from intelligence.services.jobs import source_job_queue
from retrieval.models import Document
from retrieval.services import document_set_project

# Evidence weights, as log-odds (fitted on the tuning corpus, seed 1 of bench/intelligence_corpus.py).
W_EXPLICIT_METADATA = 4.5  # an explicit project or job id in the metadata
W_EXPLICIT_TEXT = 3.5  # the same id written in the title or text
W_ALIAS = {"title": 2.2, "path": 2.2, "text": 1.6}
W_ALIAS_EXTRA_PLACE = 0.3  # the alias also in another place (title and text...)
W_ADDRESS = 2.5
W_CLIENT = 1.0
W_PARTICIPANT = 0.7
W_RULE = 3.5
W_THREAD = 3.0  # times the share of the thread's attributed documents in the project
W_FOLDER = 2.0
W_SUBJECT = 2.0
# Caps per kind, so that many weak matches never add up to an explicit id.
CAPS = {"alias": 3.0, "client": 1.5, "address": 3.0, "participant": 2.1}
NONE_PRIOR = 1.5  # log-odds of "none of these projects" (mail about nothing, a newsletter)
CONTEXT_LIMIT = 50  # earlier documents read per thread, folder or subject
EVIDENCE_KEPT = 20
SUBJECT_MIN_CHARS = 12  # shorter subjects ("update", "re: hi") are not context


@dataclass
class TargetProfile:
    target_id: int
    project_id: int
    kind: str
    aliases: list[str]
    clients: list[str]
    addresses: list[str]
    participants: set[str]
    external_ids: set[str]


@dataclass(frozen=True)
class RuleProfile:
    rule_id: int
    target_id: int
    project_id: int
    match_kind: str
    pattern: str


@dataclass
class Profiles:
    """The active targets and rules, loaded once for a batch of documents."""

    targets: list[TargetProfile]
    rules: list[RuleProfile]
    phrase_idf: dict[str, float]
    participant_idf: dict[str, float]
    slugs: dict[int, str]


def _idf(counts: Counter[str], projects: int) -> dict[str, float]:
    if projects <= 1:
        return dict.fromkeys(counts, 1.0)
    top = math.log(1 + projects)
    return {value: math.log(1 + projects / k) / top for value, k in counts.items()}


def _phrases(values: Iterable[Any]) -> list[str]:
    return sorted({p for p in (norm(str(v)) for v in values or []) if p})


def profiles_load() -> Profiles:
    """The active targets' profiles and the active rules, in matching form, with the IDF of each
    name and person over the projects that list it."""
    targets = []
    for row in IntelligenceTarget.objects.filter(active=True).select_related("project").order_by("pk"):
        people: set[str] = set()
        for person in row.participants or []:
            people |= participant_keys(person)
        targets.append(
            TargetProfile(
                target_id=row.pk,
                project_id=row.project_id,
                kind=row.kind,
                aliases=sorted(set(_phrases(row.aliases)) | {norm(row.name)} - {""}),
                clients=_phrases(row.client_names),
                addresses=_phrases(row.addresses),
                participants=people,
                external_ids={compact(str(v)) for v in row.external_ids or [] if compact(str(v))},
            )
        )
    phrase_projects: dict[str, set[int]] = defaultdict(set)
    people_projects: dict[str, set[int]] = defaultdict(set)
    for t in targets:
        for phrase in (*t.aliases, *t.clients, *t.addresses):
            phrase_projects[phrase].add(t.project_id)
        for person in t.participants:
            people_projects[person].add(t.project_id)
    projects = len({t.project_id for t in targets})
    rules = [
        RuleProfile(r.pk, r.target_id, r.target.project_id, r.match_kind, r.pattern)
        for r in AttributionRule.objects.filter(status=RuleStatus.ACTIVE, target__active=True).select_related("target")
    ]
    slugs = dict(Project.objects.filter(pk__in={t.project_id for t in targets}).values_list("pk", "slug"))
    return Profiles(
        targets=targets,
        rules=rules,
        phrase_idf=_idf(Counter({k: len(v) for k, v in phrase_projects.items()}), projects),
        participant_idf=_idf(Counter({k: len(v) for k, v in people_projects.items()}), projects),
        slugs=slugs,
    )


@dataclass
class Evidence:
    kind: str
    value: str
    weight: float
    target_id: int

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "value": self.value, "weight": round(self.weight, 3)}


@dataclass
class AttributionResult:
    """The best project for a document, its score, and what supports it."""

    project_id: int | None = None
    target_id: int | None = None
    score: float = 0.0
    evidence: list[dict[str, Any]] = field(default_factory=list)
    competitors: list[dict[str, Any]] = field(default_factory=list)  # [{"project": id, "score": s}]
    rule_ids: list[int] = field(default_factory=list)


def rule_matches(rule: RuleProfile, features: DocumentFeatures) -> bool:
    """Whether an attribution rule's pattern matches a document's features."""
    pattern = rule.pattern
    if rule.match_kind in ("alias", "phrase"):
        return any(contains_phrase(place, pattern) for place in (features.title, features.text, features.path_text))
    if rule.match_kind == "title":
        return contains_phrase(features.title, pattern)
    if rule.match_kind == "path":
        return any(folder == pattern or folder.startswith(pattern + "/") for folder in features.paths)
    if rule.match_kind == "participant":
        return pattern in features.participants
    if rule.match_kind == "domain":
        return pattern in features.domains
    if rule.match_kind == "source":
        return features.source_system == pattern
    return False


def _profile_evidence(features: DocumentFeatures, profiles: Profiles) -> list[Evidence]:
    found: list[Evidence] = []
    places = {"title": features.title, "path": features.path_text, "text": features.text}
    for t in profiles.targets:
        for external in t.external_ids:
            if external in features.explicit_ids:
                found.append(Evidence("explicit_id", external, W_EXPLICIT_METADATA, t.target_id))
            elif external in features.compact_tokens or any(
                contains_phrase(place, norm(external)) for place in (features.title, features.text)
            ):
                found.append(Evidence("explicit_id", external, W_EXPLICIT_TEXT, t.target_id))
        for alias in t.aliases:
            where = [name for name, place in places.items() if contains_phrase(place, alias)]
            if where:
                weight = max(W_ALIAS[w] for w in where) + W_ALIAS_EXTRA_PLACE * (len(where) - 1)
                found.append(
                    Evidence("alias", f"{alias} ({', '.join(where)})", weight * profiles.phrase_idf[alias], t.target_id)
                )
        for address in t.addresses:
            if any(contains_phrase(places[p], address) for p in ("title", "text")):
                found.append(Evidence("address", address, W_ADDRESS * profiles.phrase_idf[address], t.target_id))
        for client in t.clients:
            if any(contains_phrase(place, client) for place in places.values()):
                found.append(Evidence("client", client, W_CLIENT * profiles.phrase_idf[client], t.target_id))
        for person in sorted(t.participants & features.participants):
            found.append(Evidence("participant", person, W_PARTICIPANT * profiles.participant_idf[person], t.target_id))
    return found


def _context_evidence(document: Document, features: DocumentFeatures, profiles: Profiles) -> list[Evidence]:
    """Earlier attributed documents of the same thread, folder or subject, as evidence for their
    projects (weighted by each project's share of them)."""
    root_of = {t.project_id: t.target_id for t in profiles.targets if t.kind == TargetKind.PROJECT}
    metadata = document.metadata if isinstance(document.metadata, dict) else {}
    attributed = Document.objects.exclude(pk=document.pk).filter(project__isnull=False)
    found: list[Evidence] = []
    thread_q = Q()
    for key in THREAD_KEYS:
        if metadata.get(key) not in (None, "") and isinstance(metadata[key], str | int):
            thread_q |= Q(**{f"metadata__{key}": metadata[key]})
    lookups: list[tuple[str, str, float, Q]] = []
    if thread_q:
        lookups.append(("thread", features.thread, W_THREAD, thread_q))
    path = next((str(metadata[k]) for k in PATH_KEYS if metadata.get(k)), "")
    if path and "/" in path.strip("/"):
        folder = path.rsplit("/", 1)[0] + "/"
        key = next(k for k in PATH_KEYS if metadata.get(k))
        lookups.append(("folder", folder, W_FOLDER, Q(**{f"metadata__{key}__startswith": folder})))
    elif document.url and "/" in document.url.split("://", 1)[-1].strip("/"):
        folder = document.url.rsplit("/", 1)[0] + "/"
        lookups.append(("folder", folder, W_FOLDER, Q(url__startswith=folder)))
    if len(features.subject) >= SUBJECT_MIN_CHARS:
        words = [w for w in features.subject.split() if len(w) > 3][:3] or features.subject.split()[:1]
        subject_q = Q()
        for word in words:
            subject_q &= Q(title__icontains=word)
        lookups.append(("subject", features.subject, W_SUBJECT, subject_q))
    for kind, value, weight, query in lookups:
        rows = list(
            attributed.filter(query).order_by("-imported_at").values_list("project_id", "title")[:CONTEXT_LIMIT]
        )
        if kind == "subject":
            rows = [row for row in rows if subject_core(row[1]) == features.subject]
        shares = Counter(project_id for project_id, _ in rows)
        for project_id, count in shares.items():
            if project_id in root_of:
                share = count / len(rows)
                found.append(
                    Evidence(kind, f"{value} ({count} of {len(rows)} earlier)", weight * share, root_of[project_id])
                )
    return found


def attribution_score(*, document: Document, profiles: Profiles | None = None) -> AttributionResult:
    """Score a document against every active target: the best project, its calibrated score (its
    margin over the others counted), and the evidence for it."""
    profiles = profiles or profiles_load()
    if not profiles.targets:
        return AttributionResult()
    features = document_features(
        title=document.title,
        raw_text=document.raw_text,
        url=document.url,
        participants=document.participants,
        metadata=document.metadata,
        source_system=document.source_system,
    )
    project_of = {t.target_id: t.project_id for t in profiles.targets}
    evidence = _profile_evidence(features, profiles)
    explicit_projects = {project_of[e.target_id] for e in evidence if e.kind == "explicit_id"}
    for rule in profiles.rules:
        if rule.target_id not in project_of or not rule_matches(rule, features):
            continue
        if explicit_projects and rule.project_id not in explicit_projects:
            continue  # a rule never overrides an explicit id of another project
        evidence.append(
            Evidence("rule", f"{rule.match_kind}: {rule.pattern} (rule {rule.rule_id})", W_RULE, rule.target_id)
        )
    evidence.extend(_context_evidence(document, features, profiles))
    if not evidence:
        return AttributionResult()

    per_project: dict[int, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    per_target: dict[int, float] = defaultdict(float)
    for item in evidence:
        per_project[project_of[item.target_id]][item.kind] += item.weight
        per_target[item.target_id] += item.weight
    totals = {
        project_id: sum(min(total, CAPS.get(kind, math.inf)) for kind, total in kinds.items())
        for project_id, kinds in per_project.items()
    }
    denominator = math.exp(NONE_PRIOR) + sum(math.exp(total) for total in totals.values())
    ranked = sorted(totals, key=lambda p: (-totals[p], p))
    best = ranked[0]
    targets_of_best = [t for t in profiles.targets if t.project_id == best]
    # The most specific target with evidence of its own: a scope that matched, else the project.
    scopes = [t for t in targets_of_best if t.kind != TargetKind.PROJECT and per_target.get(t.target_id, 0.0) > 0]
    target = max(
        scopes or targets_of_best,
        key=lambda t: (per_target.get(t.target_id, 0.0), t.kind == TargetKind.PROJECT, -t.target_id),
    )
    kept = sorted((e for e in evidence if project_of[e.target_id] == best), key=lambda e: -e.weight)
    return AttributionResult(
        project_id=best,
        target_id=target.target_id,
        score=min(1.0, math.exp(totals[best]) / denominator),
        evidence=[e.as_dict() for e in kept[:EVIDENCE_KEPT]],
        competitors=[
            {"project": profiles.slugs.get(p, str(p)), "score": round(math.exp(totals[p]) / denominator, 3)}
            for p in ranked[1:4]
        ],
        rule_ids=sorted({int(e.value.rsplit("rule ", 1)[1].rstrip(")")) for e in kept if e.kind == "rule"}),
    )


def attribution_event(
    *,
    event_type: str,
    signal: str,
    project_slug: str | None,
    target_id: int | None,
    subject_type: str,
    subject_id: str,
    document: Document,
    before: dict[str, Any],
    after: dict[str, Any],
    actor: Actor | None = None,
    notes: str = "",
    metadata: dict[str, Any] | None = None,
) -> None:
    """Write one ``attribution`` feedback event about a document (by the system unless ``actor``)."""
    actor = actor or Actor.for_system()
    event_record(
        actor=actor,
        data=EventInput(
            event_type=event_type,
            event_family=EventFamily.ATTRIBUTION,
            signal=signal,
            user_id=actor.user.pk if actor.user else None,
            project_slug=project_slug,
            target_id=str(target_id) if target_id else "",
            surface="attribution",
            subject_type=subject_type,
            subject_id=subject_id,
            source_table=Document._meta.db_table,
            source_record_id=document.pk,
            free_text=notes[:10_000],
            before_snapshot=before,
            after_snapshot=after,
            metadata={"document": document.pk, **(metadata or {})},
        ),
    )


def _queue_extraction(document: Document, target_id: int | None) -> None:
    target = IntelligenceTarget.objects.filter(pk=target_id).first() if target_id is not None else None
    source_job_queue(kind="signal_extraction", document=document, target=target)


def candidates_close(*, document: Document, keep_id: int | None = None, notes: str) -> int:
    """Close (reject) the open candidates of a document, but ``keep_id``; how many."""
    open_ones = DocumentAttributionCandidate.objects.filter(document=document, status=AttributionStatus.CANDIDATE)
    if keep_id is not None:
        open_ones = open_ones.exclude(pk=keep_id)
    return open_ones.update(status=AttributionStatus.REJECTED, notes=notes)


def document_attribute(*, document_id: str, profiles: Profiles | None = None) -> dict[str, Any]:
    """Attribute one document: set its project (high confidence), or queue a candidate for review
    (medium), or leave it (low); then queue its signal extraction if it has a project. A document
    that already has a project keeps it and is only queued for extraction."""
    auto = intelligence_settings.INTELLIGENCE_ATTRIBUTION_AUTO
    floor = intelligence_settings.INTELLIGENCE_ATTRIBUTION_CANDIDATE
    with transaction.atomic():
        document = Document.objects.select_for_update().filter(pk=document_id).first()
        if document is None:
            return {"outcome": "missing"}
        if document.project_id is not None:
            _queue_extraction(document, _root_target_id(document.project_id))
            return {"outcome": "has_project", "project": document.project_id}
        result = attribution_score(document=document, profiles=profiles)
        summary = {
            "score": round(result.score, 4),
            "project": result.project_id,
            "target": result.target_id,
            "evidence": result.evidence,
            "competitors": result.competitors,
        }
        if result.project_id is None or result.target_id is None or result.score < floor:
            return {"outcome": "unattributed", **summary}
        slug = (profiles.slugs if profiles else {}).get(result.project_id) or Project.objects.get(
            pk=result.project_id
        ).slug
        snapshot = {"project": slug, "target": result.target_id, "score": summary["score"]}
        if result.score >= auto:
            document_set_project(document=document, project_id=result.project_id)
            candidates_close(document=document, notes="closed: attributed automatically")
            attribution_event(
                event_type="document_attribution",
                signal=Signal.ACCEPTED,
                project_slug=slug,
                target_id=result.target_id,
                subject_type="document",
                subject_id=document.pk,
                document=document,
                before={"project": None},
                after={**snapshot, "evidence": result.evidence, "competitors": result.competitors},
                metadata={"method": "rule" if result.rule_ids else "auto", "rules": result.rule_ids},
            )
            _queue_extraction(document, result.target_id)
            return {"outcome": "attributed", **summary, "rules": result.rule_ids}
        candidate = DocumentAttributionCandidate.objects.filter(
            document=document, target_id=result.target_id, status=AttributionStatus.CANDIDATE
        ).first()
        if candidate is not None:  # scored again (a re-run): the open candidate is refreshed
            candidate.score, candidate.evidence = result.score, result.evidence
            candidate.save(update_fields=["score", "evidence"])
            return {"outcome": "candidate", "candidate": candidate.pk, "created": False, **summary}
        candidate = DocumentAttributionCandidate.objects.create(
            document=document, target_id=result.target_id, score=result.score, evidence=result.evidence
        )
        attribution_event(
            event_type="document_attribution",
            signal=Signal.NEEDS_REVIEW,
            project_slug=slug,
            target_id=result.target_id,
            subject_type="attribution_candidate",
            subject_id=str(candidate.pk),
            document=document,
            before={"project": None},
            after={**snapshot, "candidate": candidate.pk, "evidence": result.evidence},
            metadata={"competitors": result.competitors, "rules": result.rule_ids},
        )
        return {"outcome": "candidate", "candidate": candidate.pk, "created": True, **summary}


def _root_target_id(project_id: int) -> int | None:
    return (
        IntelligenceTarget.objects.filter(project_id=project_id, kind=TargetKind.PROJECT)
        .values_list("pk", flat=True)
        .first()
    )


def attribution_job_handle(job: SourceIntelligenceJob) -> dict[str, Any]:
    """The ``attribution`` job's handler (see intelligence.services.jobs.HANDLERS)."""
    if not job.document_ref:
        return {"outcome": "missing"}
    return document_attribute(document_id=job.document_ref)


def documents_attribute_unattributed(*, limit: int | None = None) -> Counter[str]:
    """Score again every document without a project (after new rules or profiles): how many
    of each outcome."""
    profiles = profiles_load()
    outcomes: Counter[str] = Counter()
    ids = Document.objects.filter(project__isnull=True).order_by("pk").values_list("pk", flat=True)
    for document_id in ids[:limit] if limit else ids:
        outcomes[document_attribute(document_id=document_id, profiles=profiles)["outcome"]] += 1
    return outcomes
