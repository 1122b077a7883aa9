"""manage.py erase_user (--id 42 | --username alice | --external-id crm-4711) --yes"""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from accounts.actors import Actor
from accounts.models import User
from promotions.erasure import user_erase


class Command(BaseCommand):
    help = (
        "Erase a user: learned items, memories, messages, keys and search traces deleted; their feedback "
        "events anonymised under a user_erased event. Cannot be undone."
    )

    def add_arguments(self, parser) -> None:
        who = parser.add_mutually_exclusive_group(required=True)
        who.add_argument("--id", type=int, help="The user's id.")
        who.add_argument("--username", help="The user's username.")
        who.add_argument("--external-id", help="The assistant's id for the user (X-On-Behalf-Of).")
        parser.add_argument("--yes", action="store_true", help="Confirm: the erasure cannot be undone.")

    def handle(self, *args, **options) -> None:
        if options["id"] is not None:
            user = User.objects.filter(pk=options["id"]).first()
        elif options["username"] is not None:
            user = User.objects.filter(username=options["username"]).first()
        else:
            user = User.objects.filter(external_id=options["external_id"]).first()
        if user is None:
            raise CommandError("No such user.")
        if not options["yes"]:
            raise CommandError(f"Erasing {user.username} cannot be undone; run again with --yes.")
        report = user_erase(actor=Actor.for_system(), user=user)
        self.stdout.write(f"Erased user {report.user_id}; recorded as event {report.erasure_event_id}.")
        self.stdout.write(json.dumps(report.rows, indent=2, sort_keys=True))
