"""Compilation: a document's signals staged (``source_signal_candidates``), then upserted into
insight cards with their evidence, and the affected targets' packets refreshed once.

The ``signal_extraction`` job's handler is ``signal_extraction_handle``. Running it again for the
same document version writes nothing new: a signal is unique per (document, type, fingerprint), and
only staged signals are carded. A card is created only with an evidence excerpt; a signal similar to
an existing card of the same target and type (same fingerprint, else word similarity, or embedding
similarity when INTELLIGENCE_CARD_EMBEDDINGS is on, at INTELLIGENCE_CARD_SIMILARITY or
INTELLIGENCE_CARD_EMBEDDING_SIMILARITY) adds evidence
to that card instead of making another.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from accounts.models import Project
from intelligence.conf import intelligence_settings
from intelligence.models import (
    CardOrigin,
    CardStatus,
    CardType,
    InsightCard,
    InsightCardEvidence,
    IntelligenceTarget,
    JobKind,
    SignalStatus,
    SourceIntelligenceJob,
    SourceSignalCandidate,
    TargetKind,
)
from intelligence.services.extraction import (
    ExtractedSignal,
    LocalExtractor,
    get_extractor,
    sentences_of,
    signal_fingerprint,
    statement_normalise,
)
from intelligence.services.jobs import source_job_queue
from intelligence.services.refresh import packet_refresh_request
from intelligence.services.targets import target_for_project
from retrieval.models import Document

# Words that carry no content for similarity (function words, modality, filler of chat).
_STOP = set(
    """a an the and or but of to in on at by for with from as is are was were be been being it its this that these
    those we i you he she they them our us my your their there here has have had do does did will shall would could
    should may might can just now also still again so very really about into over than then too not no yes ok
    btw tbh pls please hi all get got some any""".split()
)


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def content_words(text: str) -> set[str]:
    """The content words of a statement (lower case, no function words), for similarity."""
    words = statement_normalise(text).split()
    return {w.rstrip("s") if len(w) > 3 else w for w in words if w not in _STOP}


def text_similarity(a: str, b: str) -> float:
    """Dice overlap of two statements' content words, 0..1."""
    left, right = content_words(a), content_words(b)
    if not left or not right:
        return 0.0
    return 2 * len(left & right) / (len(left) + len(right))


# --- targets -----------------------------------------------------------------------------------


def _normal(text: str) -> str:
    return " ".join(re.findall(r"[a-z0-9]+", text.lower()))


def _scopes(project: Project) -> list[tuple[IntelligenceTarget, list[str]]]:
    """The project's active scope targets with the names they are written as."""
    out = []
    for target in IntelligenceTarget.objects.filter(project=project, active=True).exclude(kind=TargetKind.PROJECT):
        names = [_normal(n) for n in [target.name, *(target.aliases or [])] if isinstance(n, str) and _normal(n)]
        out.append((target, sorted(set(names), key=len, reverse=True)))
    return out


def _named_scopes(text: str, scopes: list[tuple[IntelligenceTarget, list[str]]]) -> list[IntelligenceTarget]:
    padded = f" {_normal(text)} "
    return [target for target, names in scopes if any(f" {name} " in padded for name in names)]


def signal_targets(
    *, document: Document, signals: list[ExtractedSignal]
) -> tuple[IntelligenceTarget, list[IntelligenceTarget]]:
    """The document's target, and each signal's: the project's root, or the one scope a sentence
    names, else the one scope the document (title and text) names; two named scopes mean the root."""
    assert document.project is not None
    root = target_for_project(project=document.project)
    scopes = _scopes(document.project)
    if not scopes:
        return root, [root for _ in signals]
    named = _named_scopes(f"{document.title}\n{document.raw_text}", scopes)
    document_target = named[0] if len(named) == 1 else root
    out = []
    for signal in signals:
        own = _named_scopes(signal.statement, scopes)
        out.append(own[0] if len(own) == 1 else document_target)
    return document_target, out


# --- the job -----------------------------------------------------------------------------------


@dataclass
class CompileReport:
    signals: int = 0  # new signal rows
    carded: int = 0
    discarded: int = 0
    cards_created: int = 0
    cards_updated: int = 0
    resolved: int = 0
    targets: list[int] = field(default_factory=list)
    skipped: str = ""
    extractor: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if v or k in ("signals", "carded")}


def signal_extraction_queue(*, document: Document) -> SourceIntelligenceJob:
    """Queue the signal extraction of a document's current version (the open job, if there is one)."""
    return source_job_queue(kind=JobKind.SIGNAL_EXTRACTION, document=document)


def signal_extraction_handle(job: SourceIntelligenceJob) -> dict[str, Any]:
    """The ``signal_extraction`` job: extract the document's signals, card them, refresh packets."""
    document = Document.objects.select_related("project").filter(pk=job.document_ref).first()
    if document is None:
        return CompileReport(skipped="document gone").as_dict()
    if job.content_hash and document.content_hash != job.content_hash:
        return CompileReport(skipped="a newer version of the document has its own job").as_dict()
    return document_compile(document=document, job=job).as_dict()


def document_compile(*, document: Document, job: SourceIntelligenceJob | None = None) -> CompileReport:
    """Extract a document's signals into staged rows, then card them (see the module docstring)."""
    report = CompileReport()
    if document.project is None:
        report.skipped = "the document has no project yet (attribution sets it, then compiles)"
        return report
    extractor = get_extractor()
    report.extractor = extractor.name
    observed = document.source_updated_at or document.source_created_at or document.imported_at
    signals = extractor.extract(text=document.raw_text, observed_at=observed, participants=document.participants)
    _, targets = signal_targets(document=document, signals=signals)
    chunks = list(document.chunks.values_list("pk", "content"))
    rows = []
    seen: set[tuple[str, str]] = set()
    for signal, target in zip(signals, targets, strict=True):
        key = (signal.signal_type, signal.fingerprint)
        if key in seen:
            continue  # the same sentence twice in one document is one signal
        seen.add(key)
        chunk_id = next((pk for pk, content in chunks if signal.excerpt in content), None)
        rows.append(
            SourceSignalCandidate(
                document=document,
                chunk_id=chunk_id,
                job=job,
                target=target,
                signal_type=signal.signal_type,
                statement=signal.statement,
                excerpt=signal.excerpt,
                fingerprint=signal.fingerprint,
                owner=signal.owner,
                details={**signal.details, "due_at": signal.due_at.isoformat() if signal.due_at else None},
                confidence=signal.confidence,
                extractor=str(signal.details.get("extractor") or extractor.name)[:100],
            )
        )
    with transaction.atomic():
        before = SourceSignalCandidate.objects.filter(document=document).count()
        SourceSignalCandidate.objects.bulk_create(rows, ignore_conflicts=True)
        report.signals = SourceSignalCandidate.objects.filter(document=document).count() - before
        cards_upsert(document=document, observed_at=observed, report=report)
    return report


# --- cards -------------------------------------------------------------------------------------


def cards_upsert(*, document: Document, observed_at: datetime | None, report: CompileReport) -> CompileReport:
    """Card the document's staged signals: each updates a similar card of its target and type, or
    makes a new one; a signal without an excerpt or a target is discarded. One refresh per target."""
    staged = list(SourceSignalCandidate.objects.filter(document=document, status=SignalStatus.STAGED).order_by("pk"))
    if not staged:
        return report
    affected: set[int] = set()
    target_ids = sorted({s.target_id for s in staged if s.target_id is not None})
    # One upsert per target at a time: two documents saying the same thing make one card, not two.
    list(IntelligenceTarget.objects.select_for_update().filter(pk__in=target_ids).order_by("pk"))
    # The candidates, light: only the types these signals can update or resolve, only what matching reads.
    types = {s.signal_type for s in staged}
    if types & {CardType.DECISION, CardType.UPDATE}:
        types |= {CardType.OPEN_QUESTION, CardType.BLOCKER}
    cards: dict[int, list[InsightCard]] = {target_id: [] for target_id in target_ids}
    for candidate in InsightCard.objects.filter(
        target_id__in=target_ids, status__in=[CardStatus.ACTIVE, CardStatus.STALE], card_type__in=types
    ).only("pk", "target_id", "card_type", "status", "title", "fingerprint"):
        cards[candidate.target_id].append(candidate)
    for signal in staged:
        if not signal.excerpt.strip() or signal.target_id is None:
            signal.status, signal.card = SignalStatus.DISCARDED, None
            report.discarded += 1
            continue
        same_type = [c for c in cards[signal.target_id] if c.card_type == signal.signal_type]
        card = card_match(statement=signal.statement, fingerprint=signal.fingerprint, cards=same_type)
        if card is None:
            card = _card_create(signal=signal, document=document, observed_at=observed_at)
            cards[signal.target_id].append(card)
            report.cards_created += 1
        else:
            card = InsightCard.objects.get(pk=card.pk)  # the whole row, to update
            if _evidence_add(card=card, signal=signal, document=document, observed_at=observed_at):
                report.cards_updated += 1
        signal.status, signal.card = SignalStatus.CARDED, card
        report.carded += 1
        affected.add(signal.target_id)
        if signal.signal_type in (CardType.DECISION, CardType.UPDATE):
            for resolved in cards_resolve(signal=signal, cards=cards[signal.target_id]):
                report.resolved += 1
                affected.add(resolved.target_id)
    SourceSignalCandidate.objects.bulk_update(staged, ["status", "card"])
    if affected:
        packet_refresh_request(target_ids=affected, reason=f"compiled {document.pk}"[:200])
    report.targets = sorted(affected)
    return report


def card_match(*, statement: str, fingerprint: str, cards: Iterable[InsightCard]) -> InsightCard | None:
    """The card (of one target and type) a statement is about: the same fingerprint, else the most
    similar title at or above INTELLIGENCE_CARD_SIMILARITY (content words), or, when
    INTELLIGENCE_CARD_EMBEDDINGS is on, INTELLIGENCE_CARD_EMBEDDING_SIMILARITY (sentence embeddings)."""
    cards = list(cards)
    for card in cards:
        if card.fingerprint == fingerprint:
            return card
    if not cards:
        return None
    threshold = intelligence_settings.INTELLIGENCE_CARD_SIMILARITY
    if intelligence_settings.INTELLIGENCE_CARD_EMBEDDINGS:
        threshold = intelligence_settings.INTELLIGENCE_CARD_EMBEDDING_SIMILARITY
        from core.embeddings import get_embedder  # noqa: PLC0415 - the model loads only when enabled

        vectors = get_embedder().embed([statement, *(card.title for card in cards)])
        scores = [float(vectors[0] @ vector) for vector in vectors[1:]]
    else:
        scores = [text_similarity(statement, card.title) for card in cards]
    best = max(range(len(cards)), key=scores.__getitem__)
    return cards[best] if scores[best] >= threshold else None


def _due(signal: SourceSignalCandidate) -> datetime | None:
    value = (signal.details or {}).get("due_at")
    return datetime.fromisoformat(value) if isinstance(value, str) else None


def _card_create(*, signal: SourceSignalCandidate, document: Document, observed_at: datetime | None) -> InsightCard:
    when = observed_at or timezone.now()
    assert document.project_id is not None
    assert signal.target_id is not None
    card = InsightCard.objects.create(
        project_id=document.project_id,
        target_id=signal.target_id,
        card_type=signal.signal_type,
        origin=CardOrigin.SOURCE,
        title=signal.statement[:300],
        summary=signal.excerpt,
        fingerprint=signal.fingerprint,
        owner=signal.owner,
        due_at=_due(signal),
        details={k: v for k, v in (signal.details or {}).items() if k != "due_at"},
        confidence=signal.confidence,
        first_evidence_at=when,
        last_evidence_at=when,
        evidence_count=1,
    )
    InsightCardEvidence.objects.create(
        card=card,
        document=document,
        chunk_id=signal.chunk_id,
        document_ref=document.pk,
        source_system=document.source_system,
        excerpt=signal.excerpt,
        excerpt_hash=sha256(signal.excerpt),
        observed_at=when,
    )
    return card


def _evidence_add(
    *, card: InsightCard, signal: SourceSignalCandidate, document: Document, observed_at: datetime | None
) -> bool:
    """Add the signal's excerpt to the card as evidence; False when the card already had it."""
    when = observed_at or timezone.now()
    _, created = InsightCardEvidence.objects.get_or_create(
        card=card,
        excerpt_hash=sha256(signal.excerpt),
        defaults={
            "document": document,
            "chunk_id": signal.chunk_id,
            "document_ref": document.pk,
            "source_system": document.source_system,
            "excerpt": signal.excerpt,
            "observed_at": when,
        },
    )
    if not created:
        return False
    card.evidence_count = card.evidence.count()
    card.first_evidence_at = min(filter(None, [card.first_evidence_at, when]))
    card.last_evidence_at = max(filter(None, [card.last_evidence_at, when]))
    # Independent evidence raises confidence (noisy-or), never to certainty.
    card.confidence = round(min(0.99, 1 - (1 - card.confidence) * (1 - signal.confidence)), 3)
    fields = ["evidence_count", "first_evidence_at", "last_evidence_at", "confidence", "updated_at"]
    if card.status == CardStatus.STALE:
        card.status = CardStatus.ACTIVE
        fields.append("status")
    if when >= (card.last_evidence_at or when):  # the newest evidence says who and when now
        due = _due(signal)
        if signal.owner and signal.owner != card.owner:
            card.owner = signal.owner
            fields.append("owner")
        if due is not None and due != card.due_at:
            card.due_at = due
            fields.append("due_at")
        amounts = (signal.details or {}).get("amounts")
        if amounts:
            card.details = {**(card.details or {}), "amounts": amounts, "currency": signal.details.get("currency", "")}
            fields.append("details")
    card.save(update_fields=fields)
    return True


# A decision or update resolves a question or blocker only when it says so: a resolution word, and
# the same subject (most of the open card's content words).
_RESOLVES = re.compile(
    r"\b(?:resolved|answered|cleared|lifted|unblocked|came through|was issued|were issued|has been issued|"
    r"have been issued|now (?:issued|approved|granted|received|available)|(?:was|were|has been|have been) "
    r"(?:approved|granted|received|confirmed|delivered)|granted|confirmed that|arrived)\b",
    re.IGNORECASE,
)


def cards_resolve(*, signal: SourceSignalCandidate, cards: list[InsightCard]) -> list[InsightCard]:
    """Mark resolved the open questions and blockers this decision or update clearly answers: it
    states a resolution, and shares at least INTELLIGENCE_RESOLVE_OVERLAP of the card's content
    words. Anything less leaves the card as it is (no guessing)."""
    if not _RESOLVES.search(signal.statement):
        return []
    words = content_words(signal.statement)
    resolved = []
    for card in cards:
        if card.card_type not in (CardType.OPEN_QUESTION, CardType.BLOCKER) or card.status != CardStatus.ACTIVE:
            continue
        subject = content_words(card.title) - {"blocked", "blocker", "waiting", "question", "open", "hold", "pending"}
        if not subject:
            continue
        overlap = len(subject & words) / len(subject)
        if overlap < intelligence_settings.INTELLIGENCE_RESOLVE_OVERLAP:
            continue
        card.status = CardStatus.RESOLVED
        card.details = {**(card.details or {}), "resolved_by": {"signal": signal.pk, "excerpt": signal.excerpt[:500]}}
        card.save(update_fields=["status", "details", "updated_at"])
        resolved.append(card)
    return resolved


# --- memories ----------------------------------------------------------------------------------

_MEMORY_TYPES: dict[str, str] = {"commitment": CardType.COMMITMENT}


def memory_card_record(
    *, project: Project, memory_id: object, content: str, kind: str = "fact", observed_at: datetime | None = None
) -> InsightCard | None:
    """Record a project memory as a card of the project's root target with origin ``memory``
    (its evidence excerpt is the memory's text); the same memory twice is one card. A memory whose
    text says nothing a card could hold is not recorded."""
    content = " ".join(content.split())[:2000]
    if not content:
        return None
    target = target_for_project(project=project)
    ref = f"memory:{memory_id}"
    existing = InsightCard.objects.filter(target=target, origin=CardOrigin.MEMORY, evidence__document_ref=ref).first()
    if existing is not None:
        return existing
    card_type = _MEMORY_TYPES.get(kind, "")
    confidence = 0.7
    if not card_type:
        sentence = sentences_of(content)
        kind_found, confidence = LocalExtractor().classify(sentence[0]) if sentence else ("", 0.0)
        card_type = kind_found if kind_found and confidence >= 0.3 else CardType.UPDATE
        confidence = max(confidence, 0.5)
    when = observed_at or timezone.now()
    with transaction.atomic():
        card = InsightCard.objects.create(
            project=project,
            target=target,
            card_type=card_type,
            origin=CardOrigin.MEMORY,
            title=content[:300],
            summary=content,
            fingerprint=signal_fingerprint(card_type, content),
            confidence=round(min(confidence, 0.99), 3),
            first_evidence_at=when,
            last_evidence_at=when,
            evidence_count=1,
            details={"memory_id": str(memory_id), "memory_kind": kind},
        )
        InsightCardEvidence.objects.create(
            card=card,
            document_ref=ref,
            source_system="memory",
            excerpt=content,
            excerpt_hash=sha256(content),
            observed_at=when,
        )
        packet_refresh_request(target_ids=[target.pk], reason=f"memory {memory_id}")
    return card


def memory_card_set_status(*, memory_id: object, active: bool) -> int:
    """Dismiss (or bring back) the cards recorded from a memory when its promotion is paused,
    retired or resumed; how many changed. Their targets' packets are refreshed."""
    ref = f"memory:{memory_id}"
    cards = InsightCard.objects.filter(origin=CardOrigin.MEMORY, evidence__document_ref=ref).filter(
        Q(status=CardStatus.DISMISSED) if active else ~Q(status=CardStatus.DISMISSED)
    )
    with transaction.atomic():
        targets = set(cards.values_list("target_id", flat=True))
        changed = cards.update(status=CardStatus.ACTIVE if active else CardStatus.DISMISSED, updated_at=timezone.now())
        if changed:
            reason = f"memory {memory_id} {'resumed' if active else 'paused'}"
            packet_refresh_request(target_ids=targets, reason=reason)
    return changed


# --- batches (manage.py intelligence_compile, the benchmarks) -----------------------------------


def documents_compile_queue(*, document_ids: Iterable[str]) -> list[SourceIntelligenceJob]:
    """Queue the signal extraction of these documents (those with a project), one job per document
    version; their tasks go out when the transaction commits."""
    ids = list(document_ids)
    out = []
    with transaction.atomic():
        for start in range(0, len(ids), 500):
            for document in Document.objects.filter(pk__in=ids[start : start + 500], project__isnull=False):
                out.append(signal_extraction_queue(document=document))
    return out


def packets_refresh_queue(*, project_ids: Iterable[int] | None = None, reason: str = "requested") -> list[int]:
    """Ask for the packets of every active target (of these projects) to be rebuilt; their ids."""
    targets = IntelligenceTarget.objects.filter(active=True)
    if project_ids is not None:
        targets = targets.filter(project_id__in=list(project_ids))
    ids = list(targets.values_list("pk", flat=True))
    with transaction.atomic():
        packet_refresh_request(target_ids=ids, reason=reason)
    return ids


def documents_changed_compile(*, document_ids: Sequence[str]) -> None:
    """retrieval.hooks listener: queue the extraction of every imported or changed document that
    already has a project, in the import's transaction (attribution queues the others once it sets
    their project)."""
    for document in Document.objects.filter(pk__in=list(document_ids), project__isnull=False).only(
        "pk", "content_hash"
    ):
        signal_extraction_queue(document=document)
