"""Every model of the project's apps has an admin, and no admin writes a model behind its service."""

from __future__ import annotations

from django.apps import apps
from django.contrib import admin
from django.contrib.admin import ModelAdmin
from django.core import checks
from django.test import RequestFactory

from core.admin import BaseAdmin
from retrieval.models import TraceRollupChange, TraceRollupMark, TraceRollupOutside
from tests.admin.rows import BUILD, PROJECT_APPS
from tests.factories import UserFactory

# Pure bookkeeping, deliberately without an admin:
NOT_REGISTERED = {
    # one row per traced result: its id and a category code, so the rollups can take it back
    # exactly; nothing an admin reads (the results themselves are in "Retrieval feedback").
    TraceRollupMark,
    # which neighbourhoods each rollup generation changed, and which statements deleted or detached
    # trace rows: the rollups' own change log for their readers (the scan), nothing an admin reads.
    TraceRollupChange,
    TraceRollupOutside,
}
# The accounts' configuration admins keep Django's own classes (the auth admin, a key's form).
DJANGO_CLASSES = {"accounts.User", "accounts.Project", "accounts.ApiKey"}
# ...and Django's own saving: a user with their password, a project with its memberships. Every
# other admin that may add or change a row saves it through a service.
DJANGO_SAVES = {"accounts.User", "accounts.Project"}


def project_models():
    return [m for m in apps.get_models() if m._meta.app_label in PROJECT_APPS]


def test_every_model_of_the_project_has_an_admin():
    missing = [m._meta.label for m in project_models() if m not in NOT_REGISTERED and not admin.site.is_registered(m)]
    assert missing == [], f"register these in their app's admin.py (or list them in NOT_REGISTERED): {missing}"
    assert not any(admin.site.is_registered(m) for m in NOT_REGISTERED)


def test_every_registered_model_has_rows_for_the_page_tests():
    registered = {m for m in project_models() if admin.site.is_registered(m)}
    assert registered == set(BUILD), "add a row builder to tests/admin/rows.py"


def test_admins_write_only_through_services(db):
    """An admin that may add, change or delete overrides save_model / delete_model (and the bulk
    delete) to call the service; evidence admins derive from ReadOnlyAdmin, the others from
    ServiceAdmin (which grants nothing by default)."""
    request = RequestFactory().get("/admin/")
    request.user = UserFactory(is_staff=True, is_superuser=True)
    for model in project_models():
        model_admin = admin.site._registry.get(model)
        if model_admin is None:
            continue
        label = model._meta.label
        if label not in DJANGO_CLASSES:
            assert isinstance(model_admin, BaseAdmin), (
                f"{label}: derive from core.admin's ReadOnlyAdmin or ServiceAdmin"
            )
        kind = type(model_admin)
        if label not in DJANGO_SAVES and (
            model_admin.has_add_permission(request) or model_admin.has_change_permission(request)
        ):
            assert kind.save_model is not ModelAdmin.save_model, f"{label}: save through the service"
        if model_admin.has_delete_permission(request):
            assert kind.delete_model is not ModelAdmin.delete_model, f"{label}: delete through the service"
            assert kind.delete_queryset is not ModelAdmin.delete_queryset, f"{label}: bulk delete through it too"


def test_admin_system_checks_pass():
    errors = [e for e in checks.run_checks(tags=[checks.Tags.admin]) if e.level >= checks.ERROR]
    assert errors == []
