"""Evidence and the ledger are read-only in the admin: no add, change or delete, even for a superuser."""

from __future__ import annotations

import pytest
from django.contrib import admin
from django.contrib.admin.utils import quote
from django.forms.models import model_to_dict
from django.urls import reverse

from core.admin import ReadOnlyAdmin
from tests.admin.rows import BUILD

READ_ONLY = sorted(
    (m for m in BUILD if isinstance(admin.site._registry[m], ReadOnlyAdmin)), key=lambda m: m._meta.label
)


def url(model, view, *args):
    return reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_{view}", args=args)


def test_the_evidence_is_read_only():
    labels = {m._meta.label for m in READ_ONLY}
    evidence = {
        "feedback.FeedbackEvent",
        "feedback.TaskFeedback",
        "learning.ChatMessage",
        "learning.CommandRun",
        "learning.CommandDecision",
        "learning.LearningUsage",
        "learning.AgentLearning",
        "retrieval.RetrievalQuery",
        "retrieval.RetrievalFeedback",
        "retrieval.TraceRollup",
        "retrieval.RetrievalWeight",
        "intelligence.SourceIntelligenceJob",
        "intelligence.PacketRefreshJob",
        "intelligence.IntelligenceReview",
        "intelligence.DocumentAttributionCandidate",
        "promotions.LearningPromotion",
        "promotions.ScanRun",
    }
    assert evidence <= labels, evidence - labels


@pytest.mark.parametrize("model", READ_ONLY, ids=lambda m: m._meta.label)
def test_read_only_admins_refuse_add_change_and_delete(world, model):
    row = BUILD[model]()
    before = (model.objects.count(), model_to_dict(model.objects.get(pk=row.pk)))
    client = world.session_client("admin")
    pk = quote(row.pk)

    assert client.get(url(model, "add")).status_code == 403
    assert client.post(url(model, "add"), {}).status_code == 403
    view = client.get(url(model, "change", pk))
    assert view.status_code == 200
    assert b'name="_save"' not in view.content  # a view, not a form
    assert client.post(url(model, "change", pk), {}).status_code == 403
    assert client.get(url(model, "delete", pk)).status_code == 403
    assert client.post(url(model, "delete", pk), {"post": "yes"}).status_code == 403
    bulk = client.post(url(model, "changelist"), {"action": "delete_selected", "_selected_action": [row.pk]})
    assert bulk.status_code in (200, 302)  # no such action: the list again

    assert (model.objects.count(), model_to_dict(model.objects.get(pk=row.pk))) == before
