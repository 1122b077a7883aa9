from django.db import migrations

from core.migrations_ops import PostgresOnlySQL

# The rollup refresh updates tens of thousands of rollup rows in place (their counts). On full pages
# each update wrote a new row version elsewhere and a new entry in every one of the table's indexes
# (about 0.1 ms a row); with free room on the page and no indexed column changed, PostgreSQL updates
# the row on its page (a HOT update) and touches no index: about five times cheaper. VACUUM FULL
# rewrites the existing rows into pages filled to 70 %, which it cannot do inside a transaction.


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("retrieval", "0011_rollup_generations"),
    ]

    operations = [
        PostgresOnlySQL(
            "ALTER TABLE retrieval_trace_rollups SET (fillfactor = 70)",
            "ALTER TABLE retrieval_trace_rollups RESET (fillfactor)",
            elidable=False,
        ),
        PostgresOnlySQL("VACUUM FULL retrieval_trace_rollups", migrations.RunSQL.noop, elidable=False),
    ]
