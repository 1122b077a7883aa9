"""A closed-loop HTTP load generator: a fixed number of requests over N keep-alive connections.

Run as its own process (bench/ingest.py does), so the load does not share an interpreter with
the server. Every request is awaited to its response, so the accepted count is exact. Prints
one JSON line: counts per status, throughput and latency percentiles in milliseconds.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
import uuid

import aiohttp


def single_body(i: int, run: str) -> bytes:
    return json.dumps(
        {
            "event_type": "response_rated",
            "event_family": "assistant_response",
            "signal": "positive" if i % 3 else "negative",
            "surface": "bench",
            "subject_type": "message",
            "subject_id": f"{run}-{i}",
            "session_id": f"{run}-s{i % 50}",
            "metadata": {"i": i, "model": "gpt-4.1-nano"},
            "idempotency_key": f"{run}-{i}",
        }
    ).encode()


def bulk_body(i: int, run: str, size: int) -> bytes:
    events = [
        {
            "event_type": "chunk_cited",
            "event_family": "retrieval",
            "signal": "positive" if j % 4 else "ignored",
            "surface": "bench",
            "subject_type": "chunk",
            "subject_id": f"{run}-{i}-{j}",
            "metadata": {"rank": j % 10},
            "idempotency_key": f"{run}-{i}-{j}",
        }
        for j in range(size)
    ]
    return json.dumps({"events": events}).encode()


MESSAGES = (
    "could you keep answers short please",
    "Summarize the weekly sales report for the leadership team",
    "What's a good way to structure a data pipeline in Python?",
    "I follow a vegetarian diet",
    "No, I said bullet points",
    "Draft a reply to the customer about the delayed shipment",
    "Explain how database indexes work",
    "I've told you twice already, I'm on Windows",
    "Please use a formal tone from now on",
    "Write a SQL query that counts orders per customer per month",
)


def message_body(i: int, run: str) -> bytes:
    return json.dumps({"session_id": f"{run}-s{i % 20}", "content": f"{MESSAGES[i % len(MESSAGES)]} ({i})"}).encode()


def percentile(sorted_values: list[float], q: float) -> float:
    if not sorted_values:
        return float("nan")
    index = min(len(sorted_values) - 1, max(0, round(q / 100 * len(sorted_values)) - 1))
    return sorted_values[index]


async def run(args: argparse.Namespace) -> dict:
    run_id = uuid.uuid4().hex[:8]
    path = {
        "bulk": "/api/v1/feedback/events/bulk",
        "single": "/api/v1/feedback/events",
        "messages": "/api/v1/messages",
    }[args.mode]
    bodies = {
        "bulk": lambda i: bulk_body(i, run_id, args.bulk_size),
        "single": lambda i: single_body(i, run_id),
        "messages": lambda i: message_body(i, run_id),
    }[args.mode]
    headers = {"Authorization": f"Bearer {args.key}", "Content-Type": "application/json"}
    latencies: list[float] = []
    statuses: dict[int, int] = {}
    trace: list[tuple[float, float, int]] = []  # (sent at, epoch seconds; latency ms; status), with --trace
    accepted_events = 0
    counter = iter(range(args.requests))
    connector = aiohttp.TCPConnector(limit=args.concurrency)
    timeout = aiohttp.ClientTimeout(total=args.timeout)

    async with aiohttp.ClientSession(args.url, connector=connector, timeout=timeout) as session:

        async def one(i: int) -> None:
            nonlocal accepted_events
            body = bodies(i)
            # The assistant's backend writes for its users: one of --users, by external id.
            request_headers = {**headers, "X-On-Behalf-Of": f"bench-user-{i % args.users}"}
            sent_at, started = time.time(), time.perf_counter()
            try:
                async with session.post(path, data=body, headers=request_headers) as response:
                    await response.read()
                    status = response.status
            except (TimeoutError, aiohttp.ClientError):
                status = 0
            latencies.append((time.perf_counter() - started) * 1000)
            statuses[status] = statuses.get(status, 0) + 1
            if args.trace:
                trace.append((round(sent_at, 4), round(latencies[-1], 2), status))
            if status == 201:
                accepted_events += args.bulk_size if args.mode == "bulk" else 1

        async def paced() -> None:
            """Open loop: request i leaves at i / rate seconds, whatever the server's pace."""
            start = time.perf_counter()
            tasks = []
            for i in range(args.requests):
                delay = start + i / args.rate - time.perf_counter()
                if delay > 0:
                    await asyncio.sleep(delay)
                tasks.append(asyncio.create_task(one(i)))
            await asyncio.gather(*tasks)

        async def worker() -> None:
            """Closed loop: the next request leaves when this connection's last one answered."""
            for i in counter:
                await one(i)

        started = time.perf_counter()
        if args.rate:
            await asyncio.wait_for(paced(), args.max_seconds)
        else:
            await asyncio.wait_for(asyncio.gather(*(worker() for _ in range(args.concurrency))), args.max_seconds)
        elapsed = time.perf_counter() - started

    ordered = sorted(latencies)
    return {
        "mode": args.mode,
        "run": run_id,
        "requests": len(latencies),
        "statuses": statuses,
        "accepted_events": accepted_events,
        "seconds": round(elapsed, 3),
        "requests_per_s": round(len(latencies) / elapsed, 1),
        "events_per_s": round(accepted_events / elapsed, 1),
        "p50_ms": round(percentile(ordered, 50), 2),
        "p95_ms": round(percentile(ordered, 95), 2),
        "p99_ms": round(percentile(ordered, 99), 2),
        "mean_ms": round(statistics.fmean(ordered), 2) if ordered else None,
        "cpu_seconds": round(time.process_time(), 2),
        **({"trace": trace} if args.trace else {}),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--url", required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--mode", choices=["single", "bulk", "messages"], default="single")
    parser.add_argument("--rate", type=float, default=0.0, help="open loop: requests per second (0: closed loop)")
    parser.add_argument("--requests", type=int, default=5000)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--bulk-size", type=int, default=1000)
    parser.add_argument("--users", type=int, default=200, help="distinct X-On-Behalf-Of users")
    parser.add_argument("--timeout", type=float, default=30.0, help="per request, seconds")
    parser.add_argument("--max-seconds", type=float, default=300.0, help="for the whole run")
    parser.add_argument("--trace", action="store_true", help="also list every request: sent at, latency, status")
    args = parser.parse_args()
    print(json.dumps(asyncio.run(run(args))))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
