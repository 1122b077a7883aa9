"""manage.py seed_demo: a demo admin, a project, two users, a service key, some events and a
short conversation of alice's that taught the assistant her preferences.

The passwords here are demo credentials, printed for the newcomer on purpose.
"""

# ruff: noqa: S106
from __future__ import annotations

import random

from django.core.management.base import BaseCommand
from django.db import transaction

from accounts.actors import Actor
from accounts.models import ApiKey, Project, ProjectMembership, User
from accounts.selectors import api_key_list
from accounts.services import api_key_create, api_key_revoke, project_ensure, project_member_add, user_ensure
from feedback.models import EventFamily, Signal
from feedback.selectors import event_list
from feedback.services.bulk import events_record_bulk
from feedback.services.events import EventInput
from feedback.services.task_feedback import task_feedback_record
from learning.services.messages import message_observe, messages_analyze

DEMO_KEY_NAME = "demo"
DEMO_MESSAGES = (
    "could you keep your answers short please",
    "I'm a senior engineer, skip the basics",
    "Summarize the weekly sales report for the leadership team",
    "I follow a strict gluten-free diet",
    "Can you summarize this week's sales report for leadership?",
    "No, I said bullet points",
    "Summarize the sales report of this week for the leadership team please",
)


class Command(BaseCommand):
    help = "Create (or refresh) demo data and print how to log in. Safe to run again."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--admin-password", default="demo-admin-pass")
        parser.add_argument("--base-url", default="http://127.0.0.1:8000")

    @transaction.atomic
    def handle(self, *args, **options) -> None:
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

        service = Actor(user=None, api_key=service_key)
        if not event_list(actor=service).filter(surface="demo").exists():
            self._seed_events(service, project, alice, bob)
            self._seed_conversation(alice, project)
        base = options["base_url"]
        self.stdout.write(self.style.SUCCESS("Demo data ready."))
        self.stdout.write(f"""
  Open        {base}/chat/       (sign in as alice; the cog shows what was learned)
  Also        {base}/api/docs/ (API), {base}/admin/ (admin)
  Admin       admin / {options["admin_password"]}
  Users       alice / demo-alice-pass (project admin), bob / demo-bob-pass (project: demo)
  Service key {service_raw}
  Alice's key {alice_raw}

  Try:  curl -H "Authorization: Bearer {service_raw}" -H "X-On-Behalf-Of: demo-alice" {base}/api/v1/feedback/events
""")

    def _seed_conversation(self, user: User, project: Project) -> None:
        """A few chat messages for alice, analysed now, so her preferences modal has something in it."""
        self.stdout.write("Analysing demo messages (loads the embedding model once)...")
        ids = []
        for text in DEMO_MESSAGES:
            message, _ = message_observe(user=user, session_id="demo-chat", content=text, project=project)
            ids.append(str(message.pk))
        messages_analyze(message_ids=ids)  # already done if tasks ran eagerly on commit

    def _seed_events(self, service: Actor, project: Project, alice: User, bob: User) -> None:
        rng = random.Random(7)
        samples = [
            (EventFamily.ASSISTANT_RESPONSE, "response_rated", [Signal.POSITIVE, Signal.NEGATIVE]),
            (EventFamily.RETRIEVAL, "chunk_cited", [Signal.POSITIVE, Signal.IGNORED]),
            (EventFamily.TOOL_ACTION, "draft_edited", [Signal.CORRECTED, Signal.ACCEPTED]),
            (EventFamily.USER_PREFERENCE, "preference_stated", [Signal.POSITIVE]),
        ]
        items = []
        for i in range(24):
            family, event_type, signals = samples[i % len(samples)]
            user = alice if i % 2 else bob
            items.append(
                EventInput(
                    event_type=event_type,
                    event_family=family,
                    signal=rng.choice(signals),
                    user_id=user.pk,
                    project_slug=project.slug,
                    surface="demo",
                    session_id=f"demo-session-{i % 3}",
                    subject_type="message",
                    subject_id=f"demo-{i}",
                )
            )
        events_record_bulk(actor=service, items=items)
        for user, rating in ((alice, "good"), (bob, "bad")):
            task_feedback_record(
                actor=service,
                user_id=user.pk,
                project_slug=project.slug,
                rating=rating,
                task_snapshot={"id": f"demo-task-{user.username}", "title": "Follow up with the customer"},
                reason="Clear next step" if rating == "good" else "Too vague",
                surface="demo",
            )
