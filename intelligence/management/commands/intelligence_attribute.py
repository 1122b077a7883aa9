"""Score again the documents that have no project (after new attribution rules or target profiles)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from intelligence.services.attribution import documents_attribute_unattributed


class Command(BaseCommand):
    help = "Attribute again every document without a project; prints how many of each outcome."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--limit", type=int, default=None, help="at most this many documents")

    def handle(self, *args: Any, **options: Any) -> None:
        outcomes = documents_attribute_unattributed(limit=options["limit"])
        total = sum(outcomes.values())
        details = ", ".join(f"{count} {outcome}" for outcome, count in sorted(outcomes.items())) or "nothing to do"
        self.stdout.write(f"{total} documents scored: {details}.")
