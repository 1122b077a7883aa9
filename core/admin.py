"""What every app's admin shares: read-only admins for evidence, service-backed admins for the rows
an admin may change, and the helpers behind useful changelists.

- ``ReadOnlyAdmin``: rows written only by services (events, traces, the ledger): visible, never
  added, changed or deleted here.
- ``ServiceAdmin``: an admin may change these rows, but only through the app's services
  (STYLE.md): subclasses grant what they allow and call the service in ``save_model``,
  ``delete_model`` or an action, so the admin writes the same feedback events as the API.
- Both: JSON fields shown read-only are pretty-printed; changelists never load binary columns
  (embeddings) nor what ``list_defer`` names, and ``preview()`` columns read only the start of a
  long text in SQL.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterable
from typing import Any, cast
from urllib.parse import urlencode

from django import forms
from django.apps import apps
from django.contrib import admin, messages
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.contrib.admin.utils import quote
from django.contrib.admin.views.main import ChangeList
from django.db import models
from django.db.models.functions import Substr
from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString
from django.utils.text import Truncator
from django.utils.translation import gettext

from config.exceptions import ApplicationError

admin.site.site_header = "Learning layer admin"
admin.site.site_title = "Learning layer admin"
admin.site.index_title = "Every table, by app"

JSON_SUFFIX = "_json"


# --- links ----------------------------------------------------------------------------------------


@functools.cache
def _models_by_table() -> dict[str, type[models.Model]]:
    return {model._meta.db_table: model for model in apps.get_models()}


def model_for_table(db_table: str) -> type[models.Model] | None:
    """The model stored in ``db_table``: the stream and the ledger name rows by table and id."""
    return _models_by_table().get(db_table)


def admin_change_url(model: type[models.Model] | None, pk: Any) -> str | None:
    """The admin change page of row ``pk`` of ``model``, or None when the model has no admin."""
    if model is None or pk in (None, "") or not admin.site.is_registered(model):
        return None
    opts = model._meta
    return reverse(f"admin:{opts.app_label}_{opts.model_name}_change", args=[quote(pk)])


def admin_changelist_url(model: type[models.Model], **filters: Any) -> str:
    """The admin changelist of ``model`` filtered by ``filters`` (lookups on its own columns)."""
    opts = model._meta
    url = reverse(f"admin:{opts.app_label}_{opts.model_name}_changelist")
    return f"{url}?{urlencode(filters)}" if filters else url


def link(url: str | None, text: object) -> str:
    """An escaped link to ``url``, or the text alone (escaped when shown) when there is nowhere to go."""
    return format_html('<a href="{}">{}</a>', url, text) if url else str(text)


def pretty_json(value: object) -> SafeString:
    """A JSON value indented in a <pre>, escaped."""
    text = json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True, default=str)
    return format_html('<pre style="margin: 0; white-space: pre-wrap;">{}</pre>', text)


def preview(field: str, *, length: int = 80, description: str = "") -> Callable[[Any, Any], str]:
    """A changelist column with the start of a long text field: the changelist reads only its first
    ``length`` characters (SQL ``SUBSTR``), never the whole text. Assign it to an attribute of the
    admin and name that attribute in ``list_display``."""
    alias = f"_{field}_preview"

    def column(self: Any, obj: models.Model) -> str:
        text = getattr(obj, alias, None)
        if text is None:  # a row not read by the changelist
            text = getattr(obj, field) or ""
        return Truncator(" ".join(text.split())).chars(length)

    column.preview_of = (field, alias, length)  # type: ignore[attr-defined]
    column.short_description = description or field.replace("_", " ")  # type: ignore[attr-defined]
    return column


def related(path: str, description: str) -> Callable[[Any, Any], object]:
    """A changelist column showing a related row's field ("target__name"), sortable by it; select
    the relation with ``list_select_related``."""

    def column(self: Any, obj: models.Model) -> object:
        value: Any = obj
        for name in path.split("__"):
            value = getattr(value, name, None) if value is not None else None
        return "—" if value is None else value

    column.short_description = description  # type: ignore[attr-defined]
    column.admin_order_field = path  # type: ignore[attr-defined]
    return column


def _binary_columns(model: type[models.Model]) -> list[str]:
    return [f.name for f in model._meta.concrete_fields if isinstance(f, models.BinaryField)]


def _related_model(model: type[models.Model], path: str) -> type[models.Model]:
    for name in path.split("__"):
        model = model._meta.get_field(name).related_model  # type: ignore[assignment]
    return model


class LeanChangeList(ChangeList):
    """A changelist that reads what its rows show (see ``BaseAdmin.changelist_lean``)."""

    def get_queryset(self, request: HttpRequest, exclude_parameters: Any = None) -> models.QuerySet:
        model_admin = cast("BaseAdmin", self.model_admin)
        return model_admin.changelist_lean(super().get_queryset(request, exclude_parameters))


# --- the base admins ------------------------------------------------------------------------------


class BaseAdmin(admin.ModelAdmin):
    """Every project admin: lean changelists, pretty JSON, and extra links on the change page."""

    change_form_template = "admin/core/change_form.html"
    list_per_page = 50
    # Columns a changelist never loads (its own or through list_select_related: "document__raw_text").
    # Binary columns (embeddings) are never loaded anyway.
    list_defer: tuple[str, ...] = ()

    def __init__(self, model: type[models.Model], admin_site: admin.AdminSite) -> None:
        super().__init__(model, admin_site)
        self._json_fields = {f.name for f in model._meta.concrete_fields if isinstance(f, models.JSONField)}
        for name in self._json_fields:
            setattr(self, f"{name}{JSON_SUFFIX}", self._json_display(name))

    def _json_display(self, name: str) -> Callable[[models.Model], SafeString]:
        def display(obj: models.Model) -> SafeString:
            return pretty_json(getattr(obj, name))

        display.short_description = self.model._meta.get_field(name).verbose_name  # type: ignore[attr-defined]
        return display

    # JSON fields shown read-only are rendered by their ``<name>_json`` display instead.
    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> tuple[str, ...]:
        names = super().get_readonly_fields(request, obj)
        return tuple(f"{n}{JSON_SUFFIX}" if n in self._json_fields else n for n in names)

    def get_exclude(self, request: HttpRequest, obj: Any = None) -> list[str]:
        return [*(super().get_exclude(request, obj) or ()), *(f"{n}{JSON_SUFFIX}" for n in self._json_fields)]

    def get_fields(self, request: HttpRequest, obj: Any = None) -> list[Any]:
        names = super().get_fields(request, obj)
        readonly = set(self.get_readonly_fields(request, obj))
        view_only = not self.has_change_permission(request, obj) if obj is not None else False
        shown: list[Any] = []
        for name in names:
            if name in self._json_fields and (view_only or f"{name}{JSON_SUFFIX}" in readonly):
                name = f"{name}{JSON_SUFFIX}"
            if name not in shown:
                shown.append(name)
        return shown

    def get_changelist(self, request: HttpRequest, **kwargs: Any) -> type[ChangeList]:
        return LeanChangeList

    def _preview_of(self, name: object) -> tuple[str, str, int] | None:
        return getattr(getattr(self, name, None), "preview_of", None) if isinstance(name, str) else None

    def changelist_lean(self, qs: models.QuerySet) -> models.QuerySet:
        """Defer binary columns (of the rows and of what they select_related) and ``list_defer``;
        read ``preview()`` columns as substrings."""
        deferred = set(self.list_defer) | set(_binary_columns(self.model))
        related = self.list_select_related if isinstance(self.list_select_related, (list, tuple)) else ()
        for path in related:
            deferred |= {f"{path}__{name}" for name in _binary_columns(_related_model(self.model, path))}
        previews = {}
        for spec in filter(None, map(self._preview_of, self.list_display)):
            field, alias, length = spec
            previews[alias] = Substr(field, 1, length + 1)
            deferred.add(field)
        return qs.annotate(**previews).defer(*sorted(deferred))

    def row_label(self, obj: Any) -> str:
        """A row's name in its changelist, read from what the changelist loaded: its first column
        (a text preview or a plain field), else ``str()`` when nothing is deferred (it might read
        a deferred column: a query per row), else its id."""
        first = self.list_display[0] if self.list_display else None
        spec = self._preview_of(first)
        if spec and getattr(obj, spec[1], None):
            return Truncator(" ".join(getattr(obj, spec[1]).split())).chars(spec[2])
        concrete = {f.name for f in self.model._meta.concrete_fields if not f.is_relation}
        if isinstance(first, str) and first in concrete and first not in obj.get_deferred_fields():
            return str(getattr(obj, first))
        if not obj.get_deferred_fields():
            return str(obj)
        return f"{self.model._meta.verbose_name} {obj.pk}"

    def action_checkbox(self, obj: Any) -> SafeString:
        """The row's checkbox, named by ``row_label`` (Django names it by ``str()``)."""
        attrs = {
            "class": "action-select",
            "aria-label": format_html(gettext("Select this object for an action - {}"), self.row_label(obj)),
        }
        return forms.CheckboxInput(attrs, lambda value: False).render(ACTION_CHECKBOX_NAME, str(obj.pk))

    def get_object_links(self, request: HttpRequest, obj: Any) -> list[tuple[str, str]]:
        """(label, url) pairs shown with the change page's tools: the console, related changelists."""
        return []

    def render_change_form(
        self,
        request: HttpRequest,
        context: dict[str, Any],
        add: bool = False,
        change: bool = False,
        form_url: str = "",
        obj: Any = None,
    ) -> HttpResponse:
        if obj is not None:
            context["object_links"] = self.get_object_links(request, obj)
        return super().render_change_form(request, context, add, change, form_url, obj)


class ReadOnlyAdmin(BaseAdmin):
    """Rows written only by services (evidence, ledgers): visible here, never edited here."""

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class ServiceAdmin(BaseAdmin):
    """Rows an admin may change through the app's services only. Nothing is allowed by default: a
    subclass grants add, change or delete (from ``has_manage_permission``, Django's change
    permission on the model) and writes in ``save_model`` / ``delete_model`` / its actions by
    calling the service; actions declare ``permissions=["manage"]``. When the service refuses
    (``ApplicationError``) the form is shown again with the reason on its field, nothing written."""

    def has_manage_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return super().has_change_permission(request, obj)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        raise NotImplementedError(f"{type(self).__name__} grants changes: save them through the service")

    def delete_model(self, request: HttpRequest, obj: Any) -> None:
        raise NotImplementedError(f"{type(self).__name__} grants deletion: delete through the service")

    def delete_queryset(self, request: HttpRequest, queryset: models.QuerySet) -> None:
        """The bulk delete action: each row through ``delete_model`` (the service); refusals are reported."""
        for obj in queryset:
            try:
                self.delete_model(request, obj)
            except ApplicationError as exc:
                self.message_user(request, f"{obj} was not deleted: {exc.message}", messages.ERROR)

    def changeform_view(
        self, request: HttpRequest, object_id: str | None = None, form_url: str = "", extra_context: Any = None
    ) -> HttpResponse:
        try:
            return super().changeform_view(request, object_id, form_url, extra_context)
        except ApplicationError as exc:
            # The service refused and its transaction rolled back: validate the same input again,
            # with the refusal as the form's error, so the page shows it beside what was typed.
            request._service_refusal = exc  # type: ignore[attr-defined]
            return super().changeform_view(request, object_id, form_url, extra_context)

    def get_form(self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any) -> Any:
        form = super().get_form(request, obj, change, **kwargs)
        found: ApplicationError | None = getattr(request, "_service_refusal", None)
        if found is None:
            return form
        refusal = found

        class Refused(form):  # type: ignore[valid-type, misc]
            def clean(self) -> dict[str, Any]:
                cleaned = super().clean()
                fields: list[str | None] = [name for name in refusal.fields if name in self.fields]
                for name in fields or [None]:
                    self.add_error(name, refusal.message)
                return cleaned

        return Refused

    def each_row(
        self, request: HttpRequest, queryset: Iterable[Any], service: Callable[[Any], object], done: str
    ) -> None:
        """Run ``service`` on each selected row (each in its own transaction, as the API would),
        then say how many were ``done`` and which were refused, and why."""
        changed = 0
        for obj in queryset:
            try:
                service(obj)
            except ApplicationError as exc:
                self.message_user(request, f"{obj}: {exc.message}", messages.ERROR)
            else:
                changed += 1
        if changed:
            self.message_user(request, f"{changed} {done}.", messages.SUCCESS)


# --- the ledger, seen from the rows it made -------------------------------------------------------


def promotion_links(promotion_id: Any) -> list[tuple[str, str]]:
    """Links to the promotion that made a row (learnings, shared copies, weights, rules keep its id
    as a plain value): its review page in the console and its admin page. By URL name: the apps
    below the ledger never import it."""
    if not promotion_id:
        return []
    return [
        ("Promotion in console", reverse("console-promotion", args=[promotion_id])),
        ("Promotion in admin", reverse("admin:promotions_learningpromotion_change", args=[quote(promotion_id)])),
    ]


@admin.display(description="promotion")
def promotion_column(obj: Any) -> str:
    """The changelist column naming the promotion that made a row, linked to its admin page."""
    if not obj.promotion_id:
        return "—"
    url = reverse("admin:promotions_learningpromotion_change", args=[quote(obj.promotion_id)])
    return link(url, str(obj.promotion_id)[:8])
