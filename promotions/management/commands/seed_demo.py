"""manage.py seed_demo: the demo's people, project and keys, and a month of their work
(``promotions.management.demo_story``) that leaves the console something of every kind to review,
the dashboard a history and alice's preferences modal what was learned about her. Then it loads
the models (``learning.warmup``), so that the server started next answers its first chat message at once.

Safe to run again: the story is written once (a database that has it is left as it is, with fresh
keys). It lives in ``promotions`` because the story goes through every app's services, and only the
top layer may call them all (the import-linter contract).

The passwords here are demo credentials, printed for the newcomer on purpose.
"""

# ruff: noqa: S106
from __future__ import annotations

import time

from django.core.management.base import BaseCommand, CommandError

from accounts.actors import Actor
from accounts.models import ApiKey, ProjectMembership
from accounts.selectors import api_key_list
from accounts.services import api_key_create, api_key_revoke, project_ensure, project_member_add, user_ensure
from learning.selectors import messages_exist
from learning.warmup import analyzer_stored, models_warm
from promotions.management.demo_story import FULL_DAYS, DemoStory, story_counts

DEMO_KEY_NAME = "demo"


class Command(BaseCommand):
    help = "Create the demo's users, project, keys and story (once), load the models, and print how to sign in."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--admin-password", default="demo-admin-pass")
        parser.add_argument("--base-url", default="http://127.0.0.1:8000")
        parser.add_argument(
            "--days", type=int, default=FULL_DAYS, help=f"how many days the story spans (default {FULL_DAYS})"
        )
        parser.add_argument("--no-warm", action="store_true", help="do not load the models at the end")

    def handle(self, *args, **options) -> None:
        if not 3 <= options["days"] <= 365:
            raise CommandError("--days must be between 3 and 365.")
        started = time.perf_counter()
        admin = user_ensure(username="admin", is_staff=True, password=options["admin_password"])
        alice = user_ensure(username="alice", external_id="demo-alice", password="demo-alice-pass")
        bob = user_ensure(username="bob", external_id="demo-bob", password="demo-bob-pass")
        project = project_ensure(slug="demo", name="Demo project")
        project_member_add(project=project, user=alice, role=ProjectMembership.Role.ADMIN)
        project_member_add(project=project, user=bob)

        # Fresh keys every run: the old demo keys are revoked, never deleted.
        for key in api_key_list(actor=Actor(user=admin)).filter(name=DEMO_KEY_NAME, revoked_at__isnull=True):
            api_key_revoke(api_key=key)
        service_key, service_raw = api_key_create(owner=admin, name=DEMO_KEY_NAME, kind=ApiKey.Kind.SERVICE)
        _, alice_raw = api_key_create(owner=alice, name=DEMO_KEY_NAME)

        wrote = False
        if messages_exist(user=alice):
            self.stdout.write("The demo story is already in this database; keeping it.")
        else:
            self.stdout.write(f"Writing the demo story ({options['days']} days of a small team's work)...")
            story = DemoStory(
                admin=admin,
                alice=alice,
                bob=bob,
                project=project,
                service_key=service_key,
                days=options["days"],
                log=self.stdout.write,
            )
            wrote = True
            try:
                story.run()
            except Exception:
                self.stderr.write(
                    "The story stopped half-way. Start from an empty database (the demo's is var/db.sqlite3: "
                    "delete it) and run ./scripts/demo again."
                )
                raise
        counts = story_counts()
        self.stdout.write(
            "Open candidates by type: "
            + ", ".join(f"{kind} {count}" for kind, count in sorted(counts["candidates"].items()))
        )
        self.stdout.write(
            "Promotions by status: "
            + ", ".join(f"{kind} {count}" for kind, count in sorted(counts["statuses"].items()))
        )
        # The models are loaded by now if the story ran; else fitted and stored once for the server.
        if not options["no_warm"] and (wrote or not analyzer_stored()):
            timings = models_warm()
            self.stdout.write("Models loaded: " + ", ".join(f"{k} {v:.1f} s" for k, v in timings.items()))
        base = options["base_url"]
        self.stdout.write(self.style.SUCCESS(f"Demo data ready in {time.perf_counter() - started:.0f} s."))
        self.stdout.write(f"""
  Chat        {base}/chat/                 alice / demo-alice-pass (the cog: what was learned about her)
  Console     {base}/console/promotions/   admin / {options["admin_password"]} (candidates of every type)
  Also        {base}/api/docs/ (API), {base}/admin/ (admin), bob / demo-bob-pass (project member)
  Service key {service_raw}
  Alice's key {alice_raw}

  Try:  curl -H "Authorization: Bearer {service_raw}" -H "X-On-Behalf-Of: demo-alice" {base}/api/v1/feedback/events
""")
