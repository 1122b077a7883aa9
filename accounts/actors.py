"""Who is making a request, as the access rules see it."""

from __future__ import annotations

from dataclasses import dataclass

from accounts.models import ApiKey, User


@dataclass(frozen=True)
class Actor:
    """The principal of one request.

    ``user`` is whom the request acts as: the owner of a user key, the session's user,
    or the user a service key names with ``X-On-Behalf-Of`` (``None`` when a service
    key acts as itself). ``api_key`` is the key used, if any.
    """

    user: User | None
    api_key: ApiKey | None = None
    # The service itself (its own background work, e.g. the analyzer writing what it
    # learned): trusted like a service key.
    system: bool = False

    @classmethod
    def for_system(cls, *, user: User | None = None) -> Actor:
        return cls(user=user, system=True)

    @property
    def is_service(self) -> bool:
        """Service keys write for anyone and read everything (the design's service role)."""
        return self.system or (self.api_key is not None and self.api_key.is_service)

    @property
    def is_admin(self) -> bool:
        """Staff admins read everything; a service key is not an admin of the console."""
        return self.user is not None and self.user.is_staff and not self.is_service

    @property
    def sees_everything(self) -> bool:
        return self.is_service or self.is_admin

    @property
    def writer_id(self) -> str:
        """Who wrote an event, for idempotency: the service key, else the user."""
        if self.system:
            return "system"
        if self.is_service:
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
