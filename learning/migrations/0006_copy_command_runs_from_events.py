"""Copy the runs and decisions recorded before 0005 out of the feedback stream into their tables.

Until 0005 a run was only a ``post_command`` event and a decision only a ``decision_point``
event, shaped by ``learning.taste``. Each run keeps the id the API returned (the event's
``subject_id``) and links its event; each run gets at most its first well-formed decision by
the same user. Events of any other shape (written through the generic events API, say) were
never runs or decisions the taste service read, and are skipped. Rows already copied are left
alone, so running this again copies nothing twice. The shape checks are this migration's own
copy: they describe the events as they were written then.
"""

import uuid

from django.db import migrations

DECISIONS = ("accepted", "edited", "rejected", "rerun")
BATCH = 500


def _run_id(subject_id):
    """The canonical UUID the API returned, or None (the service looked runs up only by that)."""
    try:
        parsed = uuid.UUID(subject_id)
    except (TypeError, ValueError):
        return None
    return parsed if str(parsed) == subject_id else None


def _is_run(event):
    meta, shown = event.metadata, event.after_snapshot
    return (
        event.user_id is not None
        and isinstance(meta, dict)
        and isinstance(meta.get("plugin"), str)
        and 0 < len(meta["plugin"]) <= 100
        and isinstance(meta.get("command"), str)
        and 0 < len(meta["command"]) <= 100
        and isinstance(meta.get("applied_patterns", []), list)
        and all(isinstance(pk, int) for pk in meta.get("applied_patterns", []))
        and isinstance(shown, dict)
        and isinstance(shown.get("output"), str)
        and isinstance(shown.get("parameters", {}), dict)
    )


def _decision_of(event):
    """(decision, edited_output, parameters, corrections) of a well-formed decision event, or None."""
    meta, after = event.metadata, event.after_snapshot
    if not isinstance(meta, dict) or meta.get("decision") not in DECISIONS:
        return None
    corrections = meta.get("corrections", [])
    if not isinstance(corrections, list) or not all(
        isinstance(c, dict)
        and isinstance(c.get("type"), str)
        and isinstance(c.get("direction"), str)
        and isinstance(c.get("detail"), dict)
        for c in corrections
    ):
        return None
    decision, edited_output, parameters = meta["decision"], None, None
    if decision == "edited":
        edited_output = after.get("edited_output") if isinstance(after, dict) else None
        if not isinstance(edited_output, str):
            return None
    elif decision == "rerun":
        parameters = after.get("parameters") if isinstance(after, dict) else None
        if not isinstance(parameters, dict):
            return None
    return decision, edited_output, parameters, corrections


def _flush(model, db, pending, *, last=False):
    """Insert the pending rows once a batch is full (or at the end); what is left to insert."""
    if pending and (last or len(pending) >= BATCH):
        model.objects.using(db).bulk_create(pending, batch_size=BATCH)
        return []
    return pending


def copy_runs_and_decisions(apps, schema_editor):
    FeedbackEvent = apps.get_model("feedback", "FeedbackEvent")
    CommandRun = apps.get_model("learning", "CommandRun")
    CommandDecision = apps.get_model("learning", "CommandDecision")
    db = schema_editor.connection.alias

    # run id -> user id, for every run copied before or now; and the runs that have a decision.
    runs = dict(CommandRun.objects.using(db).values_list("pk", "user_id"))
    decided = set(CommandDecision.objects.using(db).values_list("run_id", flat=True))
    linked = set(CommandRun.objects.using(db).values_list("event_id", flat=True))
    linked |= set(CommandDecision.objects.using(db).values_list("event_id", flat=True))

    pending = []
    events = (
        FeedbackEvent.objects.using(db)
        .filter(event_type="post_command", subject_type="command_run")
        .order_by("created_at", "pk")  # the first event of an id is the one the service wrote
    )
    for event in events.iterator(chunk_size=BATCH):
        run_id = _run_id(event.subject_id)
        if run_id is None or run_id in runs or event.pk in linked or not _is_run(event):
            continue
        runs[run_id] = event.user_id
        pending.append(
            CommandRun(
                id=run_id,
                user_id=event.user_id,
                project_id=event.project_id,
                session_id=event.session_id,
                plugin=event.metadata["plugin"],
                command=event.metadata["command"],
                parameters=event.after_snapshot.get("parameters", {}),
                output=event.after_snapshot["output"],
                applied_patterns=event.metadata.get("applied_patterns", []),
                event_id=event.pk,
                created_at=event.created_at,
            )
        )
        pending = _flush(CommandRun, db, pending)
    _flush(CommandRun, db, pending, last=True)

    pending = []
    events = (
        FeedbackEvent.objects.using(db)
        .filter(event_type="decision_point", subject_type="command_run")
        .order_by("created_at", "pk")
    )
    for event in events.iterator(chunk_size=BATCH):
        run_id = _run_id(event.subject_id)
        if run_id is None or run_id in decided or event.pk in linked or runs.get(run_id) != event.user_id:
            continue
        found = _decision_of(event)
        if found is None:
            continue
        decision, edited_output, parameters, corrections = found
        decided.add(run_id)
        pending.append(
            CommandDecision(
                run_id=run_id,
                decision=decision,
                edited_output=edited_output,
                parameters=parameters,
                corrections=corrections,
                event_id=event.pk,
                created_at=event.created_at,
            )
        )
        pending = _flush(CommandDecision, db, pending)
    _flush(CommandDecision, db, pending, last=True)


class Migration(migrations.Migration):
    dependencies = [
        ("feedback", "0002_append_only_trigger"),
        ("learning", "0005_command_runs_and_decisions"),
    ]

    # Backwards there is nothing to undo: 0005's reversal drops the tables.
    operations = [migrations.RunPython(copy_runs_and_decisions, migrations.RunPython.noop)]
