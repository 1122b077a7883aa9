"""Users, projects, project membership and API keys."""

from __future__ import annotations

import uuid

from django.contrib.auth.models import AbstractUser
from django.db import models
from django.db.models import Q


class User(AbstractUser):
    """A person using the assistant, or an admin.

    ``external_id`` is the assistant backend's own id for the user: a service key names
    users by it (``X-On-Behalf-Of``). Staff users (``is_staff``) are the admins who read
    everything and review promotions.
    """

    external_id = models.CharField(max_length=255, unique=True, null=True, blank=True)

    class Meta:
        db_table = "accounts_user"

    def __str__(self) -> str:
        return self.username


class Project(models.Model):
    slug = models.SlugField(max_length=100, unique=True)
    name = models.CharField(max_length=200)
    created_at = models.DateTimeField(auto_now_add=True)
    members = models.ManyToManyField(User, through="ProjectMembership", related_name="projects")

    class Meta:
        db_table = "accounts_project"
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.slug


class ProjectMembership(models.Model):
    class Role(models.TextChoices):
        MEMBER = "member", "Member"
        ADMIN = "admin", "Admin"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.MEMBER)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "accounts_project_membership"
        constraints = [
            models.UniqueConstraint(fields=["project", "user"], name="membership_unique_project_user"),
            models.CheckConstraint(condition=Q(role__in=["member", "admin"]), name="membership_role_valid"),
        ]

    def __str__(self) -> str:
        return f"{self.user} in {self.project} ({self.role})"


class ApiKey(models.Model):
    """An API key, stored as a SHA-256 digest; the raw key is shown once, at creation.

    *User* keys act as their owner. *Service* keys belong to the assistant's backend:
    acting as themselves they write for any user; naming a user per request with
    ``X-On-Behalf-Of`` they have exactly that user's rights. A service key with ``projects``
    is limited to them: it neither reads nor writes project data of any other project.
    """

    class Kind(models.TextChoices):
        USER = "user", "User"
        SERVICE = "service", "Service"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    name = models.CharField(max_length=100)
    kind = models.CharField(max_length=16, choices=Kind.choices)
    # The visible start of the key ("llk_3f9a2c1b"), enough to tell keys apart in lists.
    prefix = models.CharField(max_length=16, db_index=True)
    hashed_key = models.CharField(max_length=64, unique=True)
    owner = models.ForeignKey(User, on_delete=models.CASCADE, related_name="api_keys")
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    # Empty: every project (the default); otherwise the only projects this service key may touch.
    projects = models.ManyToManyField(Project, blank=True, related_name="+", db_table="accounts_api_key_projects")

    class Meta:
        db_table = "accounts_api_key"
        ordering = ["-created_at"]
        verbose_name = "API key"
        constraints = [
            models.CheckConstraint(condition=Q(kind__in=["user", "service"]), name="api_key_kind_valid"),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…, {self.kind})"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None

    @property
    def is_service(self) -> bool:
        return self.kind == self.Kind.SERVICE
