"""The ledger's four paths and its references.

- ``target`` becomes a real reference to an intelligence target (set null on delete): the text
  ``target_id`` values that name an existing target (its id) are converted, the rest become null;
- ``project`` is set null on delete instead of cascading (the ledger outlives what it describes);
- ``promotion_path`` and ``rule``: how each promotion came to be and the rule that fired (existing
  rows were all proposed for review: ``human_review``);
- open candidates without an ``expires_at`` get one (created_at + CANDIDATE_EXPIRY_DAYS), so
  ``promotions_expire`` expires them;
- the new scanners' names in the scan runs' check constraint.
"""

from datetime import timedelta

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


def convert_targets(apps, schema_editor):
    Promotion = apps.get_model("promotions", "LearningPromotion")
    Target = apps.get_model("intelligence", "IntelligenceTarget")
    texts = set(Promotion.objects.exclude(target_id="").values_list("target_id", flat=True))
    numeric = {int(text) for text in texts if text.strip().isdigit()}
    existing = set(Target.objects.filter(pk__in=numeric).values_list("pk", flat=True))
    for pk in existing:
        Promotion.objects.filter(target_id__in=[text for text in texts if text.strip() == str(pk)]).update(
            target_ref_id=pk
        )
    _check_now(schema_editor)


def _check_now(schema_editor):
    # PostgreSQL refuses to ALTER a table with deferred foreign-key checks still pending in the
    # transaction (the rows just updated): run them now.
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("SET CONSTRAINTS ALL IMMEDIATE")


def restore_targets(apps, schema_editor):
    Promotion = apps.get_model("promotions", "LearningPromotion")
    for pk, target in Promotion.objects.exclude(target_ref=None).values_list("pk", "target_ref_id"):
        Promotion.objects.filter(pk=pk).update(target_id=str(target))
    _check_now(schema_editor)


def candidates_expire_at(apps, schema_editor):
    from promotions.conf import promotions_settings

    Promotion = apps.get_model("promotions", "LearningPromotion")
    days = timedelta(days=promotions_settings.CANDIDATE_EXPIRY_DAYS)
    for pk, created_at in Promotion.objects.filter(status="candidate", expires_at=None).values_list("pk", "created_at"):
        Promotion.objects.filter(pk=pk).update(expires_at=created_at + days)
    _check_now(schema_editor)


class Migration(migrations.Migration):

    dependencies = [
        ('accounts', '0002_api_key_project_limit'),
        ('intelligence', '0001_initial'),
        ('promotions', '0003_intelligence_scanners'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.RemoveConstraint(
            model_name='scanrun',
            name='scan_run_scanner_valid',
        ),
        migrations.AddField(
            model_name='learningpromotion',
            name='promotion_path',
            field=models.CharField(choices=[('human_review', 'Human Review'), ('repeated_failure', 'Repeated Failure'), ('workflow_outcome', 'Workflow Outcome'), ('eval_failure', 'Eval Failure')], default='human_review', max_length=20),
        ),
        migrations.AddField(
            model_name='learningpromotion',
            name='rule',
            field=models.TextField(blank=True, default=''),
        ),
        migrations.AddField(
            model_name='learningpromotion',
            name='target_ref',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='intelligence.intelligencetarget'),
        ),
        migrations.RunPython(convert_targets, restore_targets),
        migrations.RemoveField(
            model_name='learningpromotion',
            name='target_id',
        ),
        migrations.RenameField(model_name='learningpromotion', old_name='target_ref', new_name='target'),
        migrations.RunPython(candidates_expire_at, migrations.RunPython.noop),
        migrations.AlterField(
            model_name='learningpromotion',
            name='project',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='accounts.project'),
        ),
        migrations.AlterField(
            model_name='scanrun',
            name='scanner',
            field=models.CharField(choices=[('all', 'All'), ('retrieval', 'Retrieval'), ('agent_learning', 'Agent Learning'), ('task_example', 'Task Example'), ('packet_rule', 'Packet Rule'), ('attribution', 'Attribution'), ('tool_failure', 'Tool Failure'), ('task_rating', 'Task Rating'), ('workflow_outcome', 'Workflow Outcome'), ('eval_failure', 'Eval Failure')], default='all', max_length=20),
        ),
        migrations.AddConstraint(
            model_name='learningpromotion',
            constraint=models.CheckConstraint(condition=models.Q(('promotion_path__in', ['human_review', 'repeated_failure', 'workflow_outcome', 'eval_failure'])), name='promo_path_valid'),
        ),
        migrations.AddConstraint(
            model_name='scanrun',
            constraint=models.CheckConstraint(condition=models.Q(('scanner__in', ['all', 'retrieval', 'agent_learning', 'task_example', 'packet_rule', 'attribution', 'tool_failure', 'task_rating', 'workflow_outcome', 'eval_failure'])), name='scan_run_scanner_valid'),
        ),
    ]
