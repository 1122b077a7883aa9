"""Broker and cache outages while messages are observed: none may fail, none may be lost.

    .venv/bin/pip install -r bench/requirements.txt
    .venv/bin/python bench/outage.py [--posts 200] [--rate 5] [--outage-at 10] [--outage-seconds 7]

The production path: a fresh PostgreSQL database, gunicorn with config.settings.production, a
Celery worker and beat (whose schedule runs the analysis sweep, learning.analyze_pending_messages),
and two Redis servers of the bench's own, the broker (--broker-port) and the cache (--cache-port),
without persistence: a restart loses what was queued, as a crash of such a Redis would.

Each scenario posts --posts messages to POST /api/v1/messages at --rate per second and, --outage-at
seconds in, kills (SIGKILL) a Redis for --outage-seconds, then starts it again:
  broker, cache, both: the outage in the middle of the posts;
  broker-last: the posts end during the broker's outage, so no later message's task drains the
               backlog: only the sweep can (up to CELERY_BEAT_SCHEDULE's 60 s plus
               ANALYSIS_SWEEP_AFTER_SECONDS after the broker's return).
Reported per scenario: HTTP statuses; p50/p95/max latency of the requests sent during the outage
and outside it; messages stored vs accepted; how many were analysed, and when the last of them was,
counted from the Redis's return; analyses given up; claims left; the context-cache failures the
gunicorn workers counted (learning.context.cache.cache_failures); the warnings gunicorn logged
(failed publishes, throttles and key lookups without a cache); whether the worker and beat lived.
Goals: only 201s, none lost, all analysed, none given up, no claim left, worker and beat alive.
"""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import psycopg
import redis
from harness import ROOT, celery_beat, celery_worker, gunicorn, load, scratch_environment, service_key
from loadgen import percentile

VAR = ROOT / "var"
# What gunicorn logs when a dependency fails, by the start of the message (learning.services.messages,
# accounts.throttling, accounts.selectors, learning.context.cache).
LOGGED = {
    "publish failed": "could not enqueue analysis",
    "no cache to coalesce": "no cache to coalesce analysis tasks",
    "throttle without cache": "throttle could not reach the cache",
    "key lookup without cache": "api key cache unreachable",
    "context cache": "context cache ",
    "worker timeout": "WORKER TIMEOUT",
    "error": " ERROR ",
}


class RedisServer:
    """A redis-server of the bench's own on ``port``, without persistence, that it kills and restarts."""

    def __init__(self, name: str, port: int) -> None:
        self.name, self.port = name, port
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        log = open(VAR / f"bench-outage-redis-{self.port}.log", "a")  # noqa: SIM115 - the server's, closed with it
        self.process = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        log.close()
        client = redis.Redis(port=self.port, socket_connect_timeout=0.2)
        for _ in range(100):
            if self.process.poll() is not None:
                raise SystemExit(f"redis-server on port {self.port} exited (port in use?)")
            try:
                if client.ping():
                    return
            except redis.ConnectionError:
                time.sleep(0.05)
        raise SystemExit(f"redis-server on port {self.port} did not come up")

    def kill(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()

    def pause(self) -> None:
        """Stopped, not gone: connections are still accepted (by the kernel), nothing is answered."""
        assert self.process is not None
        self.process.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGCONT)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=10)


@dataclass
class Outcome:
    name: str
    down: float = 0.0  # epoch seconds the Redis servers were killed
    up: float = 0.0  # and running again
    posts: dict = field(default_factory=dict)
    state: RunState | None = None
    cache_failures: Counter = field(default_factory=Counter)
    logged: Counter = field(default_factory=Counter)
    worker_alive: bool = False
    beat_alive: bool = False


@dataclass
class RunState:
    stored: int
    analysed: int
    given_up: int
    claims_held: int  # by messages still waiting
    last_stored: float | None  # epoch seconds
    last_analysed: float | None
    last_analysed_of_outage: float | None  # of the messages stored while the Redis was down


def run_state(database_url: str, run: str, down: float = 0.0, up: float = 0.0) -> RunState:
    with psycopg.connect(database_url) as conn:
        row = conn.execute(
            """
            SELECT count(*),
                   count(analyzed_at),
                   count(*) FILTER (WHERE analyzed_at IS NOT NULL AND analysis ? 'failed_attempts'),
                   count(*) FILTER (WHERE analyzed_at IS NULL AND analysis_claimed_until > now()),
                   extract(epoch FROM max(created_at)),
                   extract(epoch FROM max(analyzed_at)),
                   extract(epoch FROM max(analyzed_at) FILTER (
                       WHERE created_at >= to_timestamp(%s) AND created_at < to_timestamp(%s)))
            FROM chat_history WHERE role = 'user' AND session_id LIKE %s
            """,
            (down, up, f"{run}-%"),
        ).fetchone()
    assert row is not None
    stored, done, given_up, claims, *times = row
    last_stored, last_analysed, last_of_outage = (None if t is None else float(t) for t in times)
    return RunState(
        int(stored), int(done - given_up), int(given_up), int(claims), last_stored, last_analysed, last_of_outage
    )


def wait_analysed(database_url: str, run: str, timeout: float) -> bool:
    deadline = time.time() + timeout
    while time.time() < deadline:
        state = run_state(database_url, run)
        if state.analysed + state.given_up >= state.stored:
            return True
        time.sleep(0.5)
    return False


def count_logged(log: Path) -> Counter:
    counts: Counter = Counter()
    for line in log.read_text(errors="replace").splitlines():
        for name, needle in LOGGED.items():
            if needle in line:
                counts[name] += 1
    return counts


def scenario(
    name: str,
    targets: list[RedisServer],
    outage_at: float,
    args: argparse.Namespace,
    env: dict,
    key: str,
    worker: subprocess.Popen,
    beat: subprocess.Popen,
) -> Outcome:
    outcome = Outcome(name=name)
    failures_file = VAR / f"bench-outage-{name}-cache-failures.jsonl"
    failures_file.unlink(missing_ok=True)
    log = VAR / f"bench-outage-{name}-gunicorn.log"
    database_url = env["DATABASE_URL"]
    server_env = {**env, "BENCH_CACHE_FAILURES": str(failures_file)}
    with gunicorn(
        server_env, args.port, args.workers, args.threads, config="bench/outage_gunicorn.conf.py", log=log
    ) as base:
        # Warm up gunicorn and the worker (it loads the embedding model on its first task).
        warm = load(base, key, "messages", requests=20, concurrency=2)
        if not wait_analysed(database_url, warm["run"], args.drain_timeout):
            raise SystemExit(f"{name}: the worker did not analyse 20 messages within {args.drain_timeout:g} s")

        def post() -> None:
            outcome.posts = load(
                base,
                key,
                "messages",
                requests=args.posts,
                rate=args.rate,
                concurrency=64,
                max_seconds=args.posts / args.rate * 3 + 60,
                trace=True,
            )

        poster = threading.Thread(target=post)
        started = time.time()
        poster.start()
        time.sleep(max(0.0, started + outage_at - time.time()))
        outcome.down = time.time()
        for server in targets:
            server.kill() if args.how == "kill" else server.pause()
        time.sleep(args.outage_seconds)
        for server in targets:
            server.start() if args.how == "kill" else server.resume()
        outcome.up = time.time()
        poster.join()
        wait_analysed(database_url, outcome.posts["run"], args.drain_timeout)
    # gunicorn has stopped: its workers wrote what they counted.
    outcome.state = run_state(database_url, outcome.posts["run"], outcome.down, outcome.up)
    if failures_file.exists():
        for line in failures_file.read_text().splitlines():
            counts = json.loads(line)
            counts.pop("pid")
            outcome.cache_failures.update(counts)
    outcome.logged = count_logged(log)
    outcome.worker_alive, outcome.beat_alive = worker.poll() is None, beat.poll() is None
    return outcome


def latency(trace: list, keep) -> str:
    values = sorted(ms for sent_at, ms, _ in trace if keep(sent_at))
    if not values:
        return "no requests"
    return (
        f"{len(values)} requests, p50 {percentile(values, 50):.1f} ms, p95 {percentile(values, 95):.1f} ms, "
        f"max {values[-1]:.1f} ms"
    )


def after(moment: float | None, start: float | None) -> str:
    return "-" if moment is None or start is None else f"{moment - start:.1f} s"


def report(outcome: Outcome, args: argparse.Namespace) -> bool:
    trace, state = outcome.posts["trace"], outcome.state
    assert state is not None
    statuses = outcome.posts["statuses"]
    accepted = sum(count for status, count in statuses.items() if str(status).startswith("2"))
    failed = len(trace) - accepted
    lost = accepted - state.stored
    waiting = state.stored - state.analysed - state.given_up
    sent_during = sum(1 for sent_at, _, _ in trace if outcome.down <= sent_at < outcome.up)

    def during(sent_at: float) -> bool:
        return outcome.down <= sent_at < outcome.up

    print(f"--- {outcome.name}: down {outcome.up - outcome.down:.1f} s")
    print(f"  posts: {len(trace)} sent, statuses {statuses}: {failed} failed")
    print(f"  latency during the outage:  {latency(trace, during)}")
    print(f"  latency outside the outage: {latency(trace, lambda sent_at: not during(sent_at))}")
    print(f"  stored {state.stored} of {accepted} accepted: {lost} lost")
    print(
        f"  analysed {state.analysed} of {state.stored}, given up {state.given_up}, waiting {waiting} "
        f"(drain timeout {args.drain_timeout:g} s), claims held {state.claims_held}"
    )
    print(
        f"  the {sent_during} sent during the outage all analysed {after(state.last_analysed_of_outage, outcome.up)} "
        f"after the return; the last of all {after(state.last_analysed, outcome.up)} after the return, "
        f"{after(state.last_analysed, state.last_stored)} after the last was stored"
    )
    print(f"  context-cache failures counted by gunicorn: {dict(outcome.cache_failures) or 0}")
    print(f"  gunicorn logged: {dict(outcome.logged) or 'nothing'}")
    print(f"  worker alive: {outcome.worker_alive}, beat alive: {outcome.beat_alive}")
    return (
        failed == 0
        and lost == 0
        and waiting == 0
        and state.given_up == 0
        and state.claims_held == 0
        and outcome.worker_alive
        and outcome.beat_alive
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pg", default="postgres://postgres@127.0.0.1:5432")
    parser.add_argument("--database", default="ll_outage")
    parser.add_argument("--broker-port", type=int, default=6390)
    parser.add_argument("--cache-port", type=int, default=6391)
    parser.add_argument("--port", type=int, default=8790)
    parser.add_argument("--workers", type=int, default=2, help="gunicorn worker processes")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--worker-concurrency", type=int, default=1, help="celery worker processes")
    parser.add_argument("--posts", type=int, default=200)
    parser.add_argument("--rate", type=float, default=5.0, help="posts per second")
    parser.add_argument("--outage-at", type=float, default=10.0, help="seconds into the posts")
    parser.add_argument("--outage-seconds", type=float, default=7.0)
    parser.add_argument(
        "--how",
        choices=["kill", "pause"],
        default="kill",
        help="kill: SIGKILL and a new server (the queue is lost); pause: SIGSTOP then SIGCONT (a hung server)",
    )
    parser.add_argument("--drain-timeout", type=float, default=240.0, help="seconds to wait for the analyses")
    parser.add_argument(
        "--scenarios", default="broker,cache,both,broker-last", help="comma-separated: broker, cache, both, broker-last"
    )
    args = parser.parse_args()
    VAR.mkdir(exist_ok=True)

    broker = RedisServer("broker", args.broker_port)
    cache = RedisServer("cache", args.cache_port)
    plans = {
        "broker": ([broker], args.outage_at),
        "cache": ([cache], args.outage_at),
        "both": ([broker, cache], args.outage_at),
        "broker-last": ([broker], args.posts / args.rate - args.outage_seconds / 2),
    }
    names = [name.strip() for name in args.scenarios.split(",") if name.strip()]
    unknown = set(names) - set(plans)
    if unknown:
        parser.error(f"--scenarios: unknown {', '.join(sorted(unknown))}")
    broker.start()
    cache.start()
    try:
        env = scratch_environment(
            args.pg,
            args.database,
            broker=f"redis://127.0.0.1:{args.broker_port}/0",
            cache=f"redis://127.0.0.1:{args.cache_port}/0",
        )
        key = service_key(env)
        outcomes = []
        with celery_worker(env, args.worker_concurrency, "info") as worker, celery_beat(env) as beat:
            for name in names:
                targets, outage_at = plans[name]
                outcomes.append(scenario(name, targets, outage_at, args, env, key, worker, beat))
    finally:
        broker.stop()
        cache.stop()
    print(
        f"{args.posts} posts at {args.rate:g}/s per scenario, Redis {args.how} {args.outage_at:g} s in for "
        f"{args.outage_seconds:g} s; gunicorn workers={args.workers} threads={args.threads}, "
        f"celery worker concurrency={args.worker_concurrency}"
    )
    met = [report(outcome, args) for outcome in outcomes]  # every scenario's report, whatever the first said
    print("goals met" if all(met) else "goals NOT met")


if __name__ == "__main__":
    main()
