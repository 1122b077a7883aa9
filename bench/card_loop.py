"""The packet/card loop on PostgreSQL, in-process through Django's full request path.

    .venv/bin/python bench/card_loop.py [--cards 300] [--calls 300] [--corrections 40] [--seed 13]

One project with its root target and five buildings, ``--cards`` cards (3 evidence each) spread over
them, a packet per target. Prints latency percentiles and query counts of: GET the packet (API),
the Project Intelligence page, POST a useful mark; then for ``--corrections`` cards a member's
wrong-target mark and an admin's approval (tasks run in-process when the approval commits, so the
approval's time includes rebuilding both packets). For each approval it checks that exactly one
refresh job per affected target ran, once, and that the card is in the new target's packet and out
of the old one.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from harness import django_in_scratch


def percentiles(samples: list[float]) -> str:
    ordered = sorted(samples)

    def at(q: float) -> float:
        return ordered[min(len(ordered) - 1, max(0, round(q / 100 * len(ordered)) - 1))]

    return (
        f"p50 {at(50):.2f} ms, p95 {at(95):.2f} ms, max {ordered[-1]:.2f} ms, mean {statistics.fmean(ordered):.2f} ms"
    )


def timed(call) -> tuple[float, object]:
    start = time.perf_counter()
    result = call()
    return (time.perf_counter() - start) * 1000, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pg", default="postgres://postgres@127.0.0.1:5432")
    parser.add_argument("--database", default="learninglayer_bench_card_loop")
    parser.add_argument("--cards", type=int, default=300)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--corrections", type=int, default=40)
    parser.add_argument("--seed", type=int, default=13)
    args = parser.parse_args()
    rng = random.Random(args.seed)

    django_in_scratch(args.pg, args.database)
    from django.db import connection
    from django.test import Client
    from django.utils import timezone

    from accounts.models import Project, ProjectMembership, User
    from core.text import digest
    from intelligence.models import (
        CardType,
        InsightCard,
        InsightCardEvidence,
        IntelligencePacket,
        IntelligenceTarget,
        JobStatus,
        PacketRefreshJob,
        TargetKind,
    )
    from intelligence.services.packets import packet_build
    from intelligence.services.targets import target_for_project
    from retrieval.models import Document

    project = Project.objects.create(slug="harbour", name="Harbour Tower")
    member = User.objects.create_user(username="member", password="x")
    admin = User.objects.create_user(username="reviewer", password="x", is_staff=True)
    ProjectMembership.objects.create(project=project, user=member)
    root = target_for_project(project=project)
    buildings = [
        IntelligenceTarget.objects.create(project=project, kind=TargetKind.BUILDING, slug=f"b{i}", name=f"Building {i}")
        for i in range(5)
    ]
    targets = [root, *buildings]
    now = timezone.now()
    cards, evidence = [], []
    for i in range(args.cards):
        target = targets[0] if i % 2 == 0 else rng.choice(buildings)
        title = f"{rng.choice(['Crane', 'Glazing', 'Permit', 'Steel', 'Invoice'])} issue {i}"
        card = InsightCard(
            project=project,
            target=target,
            card_type=rng.choice(CardType.values),
            title=title,
            fingerprint=digest(title),
            confidence=round(rng.uniform(0.4, 0.95), 2),
            last_evidence_at=now,
            first_evidence_at=now,
            evidence_count=3,
        )
        cards.append(card)
    InsightCard.objects.bulk_create(cards)
    documents = [
        Document(id=f"doc-{i}", project=project, title=f"Mail {i}", raw_text=f"Text {i}.", content_hash=str(i))
        for i in range(args.cards * 3)
    ]
    Document.objects.bulk_create(documents)
    for i, card in enumerate(cards):
        for j in range(3):
            excerpt = f"Excerpt {j} of {card.title}."
            evidence.append(
                InsightCardEvidence(
                    card=card,
                    document=documents[i * 3 + j],
                    document_ref=documents[i * 3 + j].pk,
                    source_system=rng.choice(["email", "meetings", "chat"]),
                    excerpt=excerpt,
                    excerpt_hash=digest(excerpt),
                    observed_at=now,
                )
            )
    InsightCardEvidence.objects.bulk_create(evidence)
    for target in targets:
        packet_build(target=target, reason="bench")
    on_root = IntelligencePacket.objects.get(target=root, current=True).entries.count()
    print(f"{args.cards} cards, {len(evidence)} evidence, 6 targets; root packet holds {on_root} cards")

    reader, reviewer = Client(SERVER_NAME="127.0.0.1"), Client(SERVER_NAME="127.0.0.1")
    reader.force_login(member)
    reviewer.force_login(admin)

    def measure(label: str, call, calls: int) -> None:
        warm = call()
        assert warm.status_code in (200, 201), (label, warm.status_code, warm.content[:300])
        queries: list[str] = []

        def count(execute, sql, params, many, context):
            queries.append(sql)
            return execute(sql, params, many, context)

        with connection.execute_wrapper(count):
            call()
        samples = [timed(call)[0] for _ in range(calls)]
        print(f"{label}: {percentiles(samples)} ({len(queries)} queries)")

    measure("GET packet (API)", lambda: reader.get("/api/v1/intelligence/projects/harbour/packet"), args.calls)
    measure("Project Intelligence page", lambda: reader.get("/projects/harbour/intelligence/"), args.calls)
    root_cards = list(InsightCard.objects.filter(target=root).values_list("pk", flat=True))
    measure(
        "POST useful mark",
        lambda: reader.post(
            f"/api/v1/intelligence/cards/{rng.choice(root_cards)}/feedback",
            {"signal": "useful"},
            content_type="application/json",
        ),
        args.calls,
    )

    marks, approvals, right = [], [], 0
    for card_id in rng.sample(root_cards, min(args.corrections, len(root_cards))):
        to = rng.choice(buildings)
        spent, response = timed(
            lambda card_id=card_id, to=to: reader.post(
                f"/api/v1/intelligence/cards/{card_id}/feedback",
                {"signal": "wrong_target", "target": to.slug},
                content_type="application/json",
            )
        )
        marks.append(spent)
        assert response.status_code == 201, response.content[:300]  # type: ignore[attr-defined]
        review_id = response.json()["review_id"]  # type: ignore[attr-defined]
        jobs_before = set(PacketRefreshJob.objects.values_list("pk", flat=True))
        spent, response = timed(
            lambda review_id=review_id: reviewer.post(
                f"/api/v1/intelligence/reviews/{review_id}/approve", {}, content_type="application/json"
            )
        )
        assert response.status_code == 200, response.content[:300]  # type: ignore[attr-defined]
        approvals.append(spent)
        jobs = PacketRefreshJob.objects.exclude(pk__in=jobs_before)
        one_each = sorted(jobs.values_list("target_id", "status", "attempts")) == sorted(
            [(root.pk, JobStatus.SUCCEEDED, 1), (to.pk, JobStatus.SUCCEEDED, 1)]
        )
        moved = IntelligencePacket.objects.get(target=to, current=True).entries.filter(card_id=card_id).exists()
        left = not IntelligencePacket.objects.get(target=root, current=True).entries.filter(card_id=card_id).exists()
        right += one_each and moved and left
    print(f"wrong-target mark: {percentiles(marks)}")
    print(f"approval + both packets rebuilt: {percentiles(approvals)}")
    print(f"approvals shown by the next packets after one job per target: {right}/{len(approvals)}")


if __name__ == "__main__":
    main()
