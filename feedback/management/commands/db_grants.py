"""manage.py db_grants --app-role ll_app  (PostgreSQL; run as the owner of the tables, after migrate)

Grants the application role what the service needs and nothing that could undo append-only: it
reads and writes every table, but on ``ai_feedback_events`` it may only SELECT, INSERT and UPDATE
(the trigger lets UPDATE through for the audited anonymisation alone); no DELETE, no TRUNCATE.
It refuses a role that is a superuser, may bypass row security, or owns the events table, since
such a role could disable the triggers (or set session_replication_role) and bypass them.
"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError
from django.db import connection, transaction

EVENTS = "ai_feedback_events"


class Command(BaseCommand):
    help = "Grant the application role its privileges (PostgreSQL; run as the tables' owner, after migrate)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--app-role", required=True, help="The role the service connects as.")

    def handle(self, *args, **options) -> None:
        if connection.vendor != "postgresql":
            raise CommandError("db_grants is for PostgreSQL.")
        role = options["app_role"]
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT r.rolsuper, r.rolbypassrls, pg_has_role(r.oid, c.relowner, 'MEMBER') "
                "FROM pg_roles r, pg_class c WHERE r.rolname = %s AND c.oid = %s::regclass",
                [role, EVENTS],
            )
            row = cursor.fetchone()
            if row is None:
                raise CommandError(f"No role {role!r} (create it with scripts/db-roles).")
            if any(row):
                raise CommandError(
                    f"Role {role!r} is a superuser, bypasses row security, or owns {EVENTS}: "
                    "it could switch the append-only triggers off. Use a plain login role."
                )
            name = connection.ops.quote_name(role)
            with transaction.atomic():
                for statement in (
                    f"GRANT USAGE ON SCHEMA public TO {name}",
                    f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {name}",
                    f"GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO {name}",
                    f"REVOKE DELETE, TRUNCATE, TRIGGER, REFERENCES ON {EVENTS} FROM {name}",
                    f"REVOKE INSERT, UPDATE, DELETE ON django_migrations FROM {name}",
                    "ALTER DEFAULT PRIVILEGES IN SCHEMA public "
                    f"GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO {name}",
                    f"ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT USAGE, SELECT ON SEQUENCES TO {name}",
                ):
                    cursor.execute(statement)
        self.stdout.write(f"Granted {role}: read/write on every table; {EVENTS}: SELECT, INSERT, UPDATE only.")
