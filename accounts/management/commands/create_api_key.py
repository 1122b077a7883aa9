"""manage.py create_api_key --user alice [--name laptop] [--service [--project apollo ...]]"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from accounts.models import ApiKey, Project, User
from accounts.services import api_key_create
from config.exceptions import ApplicationError


class Command(BaseCommand):
    help = "Create an API key for a user (or a service key owned by a staff admin) and print it once."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--user", required=True, help="Username of the key's owner.")
        parser.add_argument("--name", default="cli", help="A label to tell keys apart.")
        parser.add_argument(
            "--service",
            action="store_true",
            help="A service key: may write for any user via X-On-Behalf-Of (owner must be staff).",
        )
        parser.add_argument(
            "--project",
            action="append",
            default=[],
            help="Limit the service key to this project (repeat for several; none: every project).",
        )

    def handle(self, *args, **options) -> None:
        user = User.objects.filter(username=options["user"]).first()
        if user is None:
            raise CommandError(f"No user {options['user']!r}.")
        kind = ApiKey.Kind.SERVICE if options["service"] else ApiKey.Kind.USER
        projects = list(Project.objects.filter(slug__in=options["project"]))
        if missing := set(options["project"]) - {p.slug for p in projects}:
            raise CommandError(f"No project {sorted(missing)[0]!r}.")
        try:
            key, raw = api_key_create(owner=user, name=options["name"], kind=kind, projects=projects)
        except ApplicationError as exc:
            raise CommandError(exc.message) from exc
        self.stdout.write(f"Created {key.kind} key {key.prefix}… ({key.name}) for {user.username}.")
        self.stdout.write("Store it now; it is not shown again:")
        self.stdout.write(raw)
