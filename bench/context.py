"""Context assembly latency for a user with 50 preferences and 20 workflows, on PostgreSQL.

    .venv/bin/python bench/context.py [--calls 2000]

Measures GET /api/v1/context?message=... through Django's full request path (in-process,
no network), and the selector alone. Goal: p95 <= 10 ms.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from harness import scratch_environment


def percentiles(samples: list[float]) -> str:
    ordered = sorted(samples)

    def at(q: float) -> float:
        return ordered[min(len(ordered) - 1, round(q / 100 * len(ordered)) - 1)]

    return f"p50 {at(50):.2f} ms, p95 {at(95):.2f} ms, p99 {at(99):.2f} ms, mean {statistics.fmean(ordered):.2f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pg", default="postgres://postgres@127.0.0.1:5432")
    parser.add_argument("--database", default="learninglayer_bench_context")
    parser.add_argument("--calls", type=int, default=2000)
    args = parser.parse_args()

    env = scratch_environment(args.pg, args.database)
    os.environ.update(
        {
            k: env[k]
            for k in (
                "DJANGO_SETTINGS_MODULE",
                "DEBUG",
                "SECRET_KEY",
                "ALLOWED_HOSTS",
                "DATABASE_URL",
                "SECURE_SSL_REDIRECT",
                "LOG_LEVEL",
            )
        }
    )
    import django

    django.setup()
    from django.test import Client

    from accounts.models import User
    from accounts.services import api_key_create
    from learning.context.build import context_build
    from learning.models import LearnedWorkflow
    from learning.services.preferences import preference_add_manual

    user = User.objects.get(username="bench")
    for i in range(50):
        preference_add_manual(
            user=user,
            category=("tone", "length", "format", "expertise", "output", "behavior")[i % 6],
            description=f"Learned rule number {i} about how to answer",
        )
    topics = [
        "sales report",
        "standup notes",
        "customer email",
        "invoice",
        "release notes",
        "sql query",
        "test plan",
        "meeting agenda",
        "budget",
        "job post",
        "blog draft",
        "code review",
        "incident summary",
        "roadmap",
        "survey results",
        "press release",
        "user interview",
        "onboarding doc",
        "contract",
        "newsletter",
    ]
    for topic in topics:
        LearnedWorkflow.objects.create(
            user=user,
            workflow_name=f"Weekly {topic}",
            trigger_pattern=f"Summarize the {topic}",
            example_input=f"Please summarize this week's {topic} for the team",
            preferred_output="Three bullets",
            times_detected=3,
            confidence=0.7,
        )
    _, raw = api_key_create(owner=user, name="bench-context")
    client = Client(HTTP_AUTHORIZATION=f"Bearer {raw}", SERVER_NAME="127.0.0.1")

    http, direct = [], []
    for i in range(args.calls + 100):
        message = f"Can you summarize the {topics[i % len(topics)]} from today?"
        started = time.perf_counter()
        response = client.get("/api/v1/context", {"message": message})
        elapsed = (time.perf_counter() - started) * 1000
        assert response.status_code == 200, response.content
        started = time.perf_counter()
        context = context_build(user=user, message=message)
        direct_elapsed = (time.perf_counter() - started) * 1000
        if i >= 100:  # warm-up excluded
            http.append(elapsed)
            direct.append(direct_elapsed)
    assert context.workflow is not None
    print(f"user with 50 preferences, 20 workflows; {args.calls} calls each, PostgreSQL")
    print(f"GET /api/v1/context (full request path): {percentiles(http)}")
    print(f"context_build (selector alone):          {percentiles(direct)}")
    print("goal met" if sorted(http)[int(0.95 * len(http)) - 1] <= 10 else "goal NOT met")


if __name__ == "__main__":
    main()
