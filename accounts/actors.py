"""Who is making a request, as the access rules see it."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Q

from accounts.models import ApiKey, User


@dataclass(frozen=True)
class Actor:
    """The principal of one request.

    ``user`` is whom the request acts as: the owner of a user key, the session's user,
    or the user a service key names with ``X-On-Behalf-Of`` (``None`` when a service
    key acts as itself). ``api_key`` is the key used, if any.

    A service key acting *as itself* writes for anyone and reads everything. Acting *for a
    user* it has exactly that user's rights (a staff user's included, minus the console:
    a key is never an admin). ``project_ids`` is the key's project limit (None: none):
    on top of either, it reads and writes project data of those projects only.
    """

    user: User | None
    api_key: ApiKey | None = None
    # The service itself (its own background work, e.g. the analyzer writing what it
    # learned): trusted like a service key.
    system: bool = False
    project_ids: frozenset[int] | None = None

    @classmethod
    def for_system(cls, *, user: User | None = None) -> Actor:
        return cls(user=user, system=True)

    @property
    def is_service_key(self) -> bool:
        """The request came with a service key (acting as itself or for a user)."""
        return self.api_key is not None and self.api_key.is_service

    @property
    def acting_for(self) -> bool:
        """A service key naming a user: the user's rights, not the service's."""
        return not self.system and self.is_service_key and self.user is not None

    @property
    def is_service(self) -> bool:
        """The service acting as itself: writes for anyone, reads everything (within its projects)."""
        return self.system or (self.is_service_key and self.user is None)

    @property
    def is_admin(self) -> bool:
        """Staff admins read everything; a key of the service is never an admin of the console."""
        return self.user is not None and self.user.is_staff and not self.system and not self.is_service_key

    @property
    def sees_everything(self) -> bool:
        return self.is_admin or (self.is_service and self.project_ids is None)

    @property
    def is_limited(self) -> bool:
        return self.project_ids is not None

    def may_use_project(self, project_id: int | None) -> bool:
        """Does the key's project limit allow this project? Data of no project is the named
        user's own (allowed when acting for a user), never a limited service's as itself."""
        if self.project_ids is None:
            return True
        if project_id is None:
            return self.user is not None
        return project_id in self.project_ids

    def limit_q(self, field: str = "project") -> Q:
        """Rows within the key's project limit (the same rule as :meth:`may_use_project`)."""
        if self.project_ids is None:
            return Q()
        q = Q(**{f"{field}__in": self.project_ids})
        if self.user is not None:
            q |= Q(**{f"{field}__isnull": True})
        return q

    @property
    def writer_id(self) -> str:
        """Who wrote an event, for idempotency: the service key, else the user."""
        if self.system:
            return "system"
        if self.is_service_key:
            assert self.api_key is not None
            return f"key:{self.api_key.id}"
        assert self.user is not None
        return f"user:{self.user.pk}"

    @classmethod
    def from_request(cls, request) -> Actor:
        auth = getattr(request, "auth", None)
        if isinstance(auth, Actor):
            return auth
        user = request.user if request.user.is_authenticated else None
        return cls(user=user)
