"""Retrieval learning on Cranfield: does applying what the scan proposes help, and only where it should?

    .venv/bin/python bench/retrieval_learning.py [--seeds 5] [--flip 0.2] [--unscoped]

Loads ../shared/data/cranfield through the import command into a scratch PostgreSQL
database; for each seed splits the 225 queries 150/75, then, through the real API:
measures NDCG@10 on both halves, simulates users on the training half (each training
query asked by three users, who cite and mark helpful the judged-relevant chunks that
search returned and mark the others unhelpful; --flip turns that share of the marks
around), runs the scan, approves and applies every candidate, and measures again.
--unscoped applies the same multipliers to every query instead (for comparison).
Goals: training NDCG@10 up >= 50 % relative; held-out never below its baseline.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import re
import statistics
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from harness import scratch_environment

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "cranfield"


def parse_smart(path: Path) -> dict[str, dict[str, str]]:
    records: dict[str, dict[str, str]] = {}
    current, field = None, None
    for line in path.read_text().splitlines():
        match = re.match(r"^\.([ITABW])\s*(.*)$", line)
        if match and match.group(1) == "I":
            current, field = str(int(match.group(2))), None
            records[current] = {}
        elif match:
            field = match.group(1)
            records[current].setdefault(field, "")
        elif current is not None and field is not None:
            records[current][field] += line + "\n"
    return records


def load() -> tuple[dict, list[str], dict[int, dict[str, int]]]:
    docs = parse_smart(DATA / "cran.all.1400")
    queries = [" ".join(q.get("W", "").split()) for q in parse_smart(DATA / "cran.qry").values()]
    judgments: dict[int, dict[str, int]] = defaultdict(dict)
    for line in (DATA / "cranqrel").read_text().splitlines():
        parts = line.split()
        if len(parts) >= 3 and int(parts[2]) > 0:
            judgments[int(parts[0]) - 1][parts[1]] = int(parts[2])  # positions 1..225 -> 0..224
    return docs, queries, judgments


def ndcg10(ranked_docs: list[str], judged: dict[str, int]) -> float:
    gain = {doc: 5 - grade for doc, grade in judged.items()}  # grade 1 (complete answer) is the best
    dcg = sum((2 ** gain.get(d, 0) - 1) / math.log2(i + 2) for i, d in enumerate(ranked_docs[:10]))
    ideal = sorted(gain.values(), reverse=True)[:10]
    idcg = sum((2**g - 1) / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pg", default="postgres://postgres@127.0.0.1:5432")
    parser.add_argument("--database", default="learninglayer_bench_retrieval")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--flip", type=float, default=0.0, help="share of simulated marks turned around")
    parser.add_argument("--users", type=int, default=3, help="simulated users asking each training query")
    parser.add_argument("--unscoped", action="store_true", help="apply every learned multiplier to all queries")
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
    os.environ.setdefault("EMBEDDING_THREADS", "2")
    os.environ["RETRIEVAL_INDEX_DIR"] = tempfile.mkdtemp(prefix="cranfield-index-")
    import django

    django.setup()
    from django.core.management import call_command
    from django.test import Client

    from accounts.models import User
    from accounts.services import api_key_create, user_ensure
    from promotions.models import LearningPromotion
    from retrieval.models import RetrievalQuery, RetrievalWeight

    docs, queries, judgments = load()
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as handle:
        for doc_id, fields in docs.items():
            text = " ".join(fields.get("W", "").split()) or " ".join(fields.get("T", "").split())
            handle.write(
                json.dumps({"id": doc_id, "title": " ".join(fields.get("T", "").split()), "text": text}) + "\n"
            )
    call_command("import_documents", handle.name, stdout=open(os.devnull, "w"))  # noqa: SIM115

    admin = User.objects.get(username="bench")
    admin_client = Client(
        SERVER_NAME="127.0.0.1", HTTP_AUTHORIZATION=f"Bearer {api_key_create(owner=admin, name='admin')[1]}"
    )
    users = []
    for i in range(args.users):
        user = user_ensure(username=f"reader{i}", password="unused-password-123")
        users.append(
            Client(SERVER_NAME="127.0.0.1", HTTP_AUTHORIZATION=f"Bearer {api_key_create(owner=user, name='reader')[1]}")
        )
    evaluator = Client(
        SERVER_NAME="127.0.0.1", HTTP_AUTHORIZATION=f"Bearer {api_key_create(owner=admin, name='eval')[1]}"
    )

    def ranked(client: Client, query: str) -> dict:
        response = client.post(
            "/api/v1/retrieval/search", {"query": query, "k": 10, "tool_name": "bench"}, content_type="application/json"
        )
        assert response.status_code == 200, response.content
        return response.json()

    def evaluate(positions: list[int]) -> float:
        scores = []
        for position in positions:
            body = ranked(evaluator, queries[position])
            order = list(dict.fromkeys(r["document_id"] for r in body["results"]))
            scores.append(ndcg10(order, judgments.get(position, {})))
            RetrievalQuery.objects.filter(pk=body["trace_id"]).delete()  # measuring is not feedback
        return statistics.fmean(scores)

    rows = []
    for seed in range(args.seeds):
        RetrievalQuery.objects.all().delete()
        RetrievalWeight.objects.all().delete()
        LearningPromotion.objects.all().delete()
        rng = random.Random(seed)
        positions = [p for p in range(len(queries)) if judgments.get(p)]
        rng.shuffle(positions)
        train, held = positions[:150], positions[150:225]
        before = (evaluate(train), evaluate(held))

        for position in train:
            relevant = judgments[position]
            for client in users:
                body = ranked(client, queries[position])
                marks = []
                for result in body["results"]:
                    good = result["document_id"] in relevant
                    if rng.random() < args.flip:
                        good = not good
                    marks.append(
                        {
                            "chunk_id": result["chunk_id"],
                            "cited": good,
                            "used_in_answer": good,
                            "outcome": "helpful" if good else "unhelpful",
                        }
                    )
                response = client.post(
                    "/api/v1/retrieval/feedback",
                    {"trace_id": body["trace_id"], "results": marks},
                    content_type="application/json",
                )
                assert response.status_code == 200, response.content

        # Queued as a scan run; with no broker it has run by the time the 202 answers.
        scan = admin_client.post("/api/v1/promotions/scan").json()["report"]["retrieval"]
        for promotion in LearningPromotion.objects.filter(status="candidate").values_list("pk", flat=True):
            for action in ("approve", "apply"):
                response = admin_client.post(
                    f"/api/v1/promotions/{promotion}/{action}", {}, content_type="application/json"
                )
                assert response.status_code == 200, response.content
        if args.unscoped:
            RetrievalWeight.objects.filter(status="active").update(scope="global")
        after = (evaluate(train), evaluate(held))
        weights = RetrievalWeight.objects.filter(status="active").count()
        rows.append((seed, before, after, scan, weights))
        print(
            f"seed {seed}: train {before[0]:.4f} -> {after[0]:.4f} ({(after[0] / before[0] - 1) * 100:+.1f} %), "
            f"held-out {before[1]:.4f} -> {after[1]:.4f} ({(after[1] / before[1] - 1) * 100:+.1f} %); "
            f"candidates {scan['boosts']} boosts, {scan['penalties']} penalties; {weights} weights",
            flush=True,
        )

    train_gain = statistics.fmean(a[0] / b[0] - 1 for _, b, a, _, _ in rows)
    held_worst = min(a[1] / b[1] - 1 for _, b, a, _, _ in rows)
    print(
        f"mean training gain {train_gain * 100:+.1f} %, worst held-out change {held_worst * 100:+.2f} % "
        f"(flip {args.flip:.0%}{', unscoped' if args.unscoped else ''})"
    )
    print("goals met" if train_gain >= 0.5 and held_worst >= 0 else "goals NOT met")


if __name__ == "__main__":
    main()
