from django import forms
from django.contrib import admin, messages
from django.contrib.auth.admin import UserAdmin as BaseUserAdmin

from accounts.models import ApiKey, Project, ProjectMembership, User
from accounts.selectors import api_key_project_limit_forget
from accounts.services import api_key_revoke


@admin.register(User)
class UserAdmin(BaseUserAdmin):
    list_display = ("username", "external_id", "email", "is_staff", "is_active", "date_joined")
    search_fields = ("username", "external_id", "email")
    fieldsets = (*(BaseUserAdmin.fieldsets or ()), ("Assistant", {"fields": ("external_id",)}))


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

    def save_related(self, request, form, formsets, change) -> None:
        super().save_related(request, form, formsets, change)
        api_key_project_limit_forget(api_key_id=str(form.instance.pk))

    @admin.action(description="Revoke selected keys")
    def revoke(self, request, queryset) -> None:
        for key in queryset:
            api_key_revoke(api_key=key)
        self.message_user(request, f"Revoked {queryset.count()} key(s).", messages.SUCCESS)
