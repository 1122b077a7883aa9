"""HTTP API of erasure (staff admins): erase a user and everything that names them."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.actors import Actor
from accounts.models import User
from config.api import OnBehalfOf
from config.exceptions import AccessDenied, Conflict, NotFoundError
from config.schema import error_example
from promotions.erasure import user_erase

STAFF_ONLY = "Only staff admins erase users."


class ErasureOutputSerializer(serializers.Serializer):
    user_id = serializers.IntegerField(help_text="The erased user's former id.")
    erasure_event_id = serializers.UUIDField(help_text="The user_erased event that records this erasure.")
    rows = serializers.DictField(
        child=serializers.IntegerField(), help_text="Rows deleted (or anonymised, or scrubbed) per table."
    )


class UserEraseApi(APIView):
    on_behalf_of = OnBehalfOf.REFUSED
    error_examples = [error_example(403, "permission_denied", STAFF_ONLY, name="not_staff")]

    @extend_schema(
        request=None,
        responses=ErasureOutputSerializer,
        summary="Erase a user: learned items, messages, traces, keys deleted; their events anonymised",
        description="In one transaction: the user's learned items, messages, traces, ratings, keys and "
        "memberships are deleted, evidence shared with others is scrubbed of them, and their feedback events "
        "are kept anonymised (the organisation's evidence). `rows` counts what changed per table.",
        examples=[
            error_example(
                409,
                "conflict",
                "You cannot erase yourself; ask another admin or use manage.py erase_user.",
                name="yourself",
            )
        ],
    )
    def post(self, request: Request, user_id: int) -> Response:
        actor = Actor.from_request(request)
        if not actor.is_admin:  # staff people only: never a service key, nor one acting for a staff user
            raise AccessDenied(STAFF_ONLY)
        user = User.objects.filter(pk=user_id).first()
        if user is None:
            raise NotFoundError("No such user.")
        if actor.user is not None and actor.user.pk == user.pk:
            raise Conflict("You cannot erase yourself; ask another admin or use manage.py erase_user.")
        report = user_erase(actor=actor, user=user)
        return Response(ErasureOutputSerializer(report).data)
