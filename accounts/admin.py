"""Users, projects, memberships and API keys in the admin.

Deleting a user or a project is the erasure or the audited deletion, which reach every app: they
are granted in promotions/admin.py (the app above all others), and refused by the admins here.
"""

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.auth.admin import UserAdmin as BaseUserAdmin
from django.http import HttpRequest

from accounts.models import ApiKey, Project, ProjectMembership, User
from accounts.services import api_key_projects_set, api_key_revoke
from core.admin import ReadOnlyAdmin


@admin.register(User)
class UserAdmin(BaseUserAdmin):
    list_display = ("username", "external_id", "email", "is_staff", "is_active", "date_joined")
    list_filter = ("is_staff", "is_superuser", "is_active")
    search_fields = ("username", "external_id", "email")
    fieldsets = (*(BaseUserAdmin.fieldsets or ()), ("Assistant", {"fields": ("external_id",)}))

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # deleting a user is the erasure: promotions/admin.py


class MembershipInline(admin.TabularInline):
    model = ProjectMembership
    extra = 0
    autocomplete_fields = ("user",)


@admin.register(Project)
class ProjectAdmin(admin.ModelAdmin):
    list_display = ("slug", "name", "created_at")
    search_fields = ("slug", "name")
    prepopulated_fields = {"slug": ("name",)}
    inlines = [MembershipInline]

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # the audited deletion: promotions/admin.py


@admin.register(ProjectMembership)
class ProjectMembershipAdmin(ReadOnlyAdmin):
    """Every membership at a glance; they are edited on their project's page."""

    list_display = ("user", "project", "role", "created_at")
    list_filter = ("role", "project")
    search_fields = ("user__username", "project__slug", "project__name")
    list_select_related = ("user", "project")
    ordering = ("project__slug", "user__username")


class ApiKeyAdminForm(forms.ModelForm):
    class Meta:
        model = ApiKey
        fields = ("projects",)

    def clean_projects(self):
        projects = self.cleaned_data["projects"]
        if projects and self.instance.kind != ApiKey.Kind.SERVICE:
            raise forms.ValidationError("Only service keys can be limited to projects.")
        return projects


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    """Keys are created with ``manage.py create_api_key`` or the API (the raw key is shown once);
    here a service key's project limit can be set ("projects": empty means every project)."""

    form = ApiKeyAdminForm
    filter_horizontal = ("projects",)

    list_display = ("prefix", "name", "kind", "owner", "created_at", "last_used_at", "revoked_at")
    list_filter = ("kind",)
    search_fields = ("prefix", "name", "owner__username")
    list_select_related = ("owner",)
    readonly_fields = ("id", "name", "kind", "prefix", "owner", "created_at", "last_used_at", "revoked_at")
    exclude = ("hashed_key",)
    actions = ["revoke"]

    def has_add_permission(self, request) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False

    def save_model(self, request, obj, form, change) -> None:
        """Nothing of the row itself is editable here (a full save would race ``last_used_at``)."""

    def save_related(self, request, form, formsets, change) -> None:
        if "projects" in form.changed_data:
            api_key_projects_set(api_key=form.instance, projects=list(form.cleaned_data["projects"]))

    @admin.action(description="Revoke selected keys")
    def revoke(self, request, queryset) -> None:
        for key in queryset:
            api_key_revoke(api_key=key)
        self.message_user(request, f"Revoked {queryset.count()} key(s).", messages.SUCCESS)
