"""The user's preferences: list, add by hand, check in, switch on or off, forget."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response

from config.api import ChoiceField, StrictCharField, StrictInputSerializer
from learning import selectors
from learning.apis.common import UNDO_HELP, NoInputSerializer, ToggleInputSerializer, UserDataApi, subject_user
from learning.models import PREFERENCE_CATEGORIES
from learning.services import preferences


class PreferenceOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    category = serializers.CharField()
    preference = serializers.CharField()
    description = serializers.CharField()
    axis = serializers.CharField()
    candidate = serializers.BooleanField()
    confidence = serializers.FloatField()
    times_reinforced = serializers.IntegerField()
    active = serializers.BooleanField()
    source = serializers.CharField()  # type: ignore[assignment]  # the metaclass pops declared fields
    inactive_reason = serializers.CharField()
    superseded_by = serializers.IntegerField(source="superseded_by_id", allow_null=True)
    superseded_at = serializers.DateTimeField(allow_null=True)
    last_reinforced_at = serializers.DateTimeField()
    created_at = serializers.DateTimeField()


class PreferenceInputSerializer(StrictInputSerializer):
    """A preference in the user's words; the category, when absent, is the analyzer's reading."""

    description = StrictCharField(max_length=500)
    category = ChoiceField(choices=[(c, c) for c in PREFERENCE_CATEGORIES], required=False)


class PreferencesOutputSerializer(serializers.Serializer):
    preferences = PreferenceOutputSerializer(many=True)


class PreferenceListCreateApi(UserDataApi):
    @extend_schema(
        responses=PreferencesOutputSerializer,
        summary="Your preferences, active first",
        description="Every preference learned or added for the user, in their words (`description`), with its "
        "category, confidence and state: `active`, a `candidate` (tentative: never injected), or inactive "
        "with an `inactive_reason` (switched off, contradicted by a newer one, faded).",
    )
    def get(self, request: Request) -> Response:
        rows = selectors.preference_list(user=subject_user(request))
        return Response({"preferences": PreferenceOutputSerializer(rows, many=True).data})

    @extend_schema(
        request=PreferenceInputSerializer,
        responses={201: PreferenceOutputSerializer, 200: PreferenceOutputSerializer},
        summary="Add a preference by hand (a paraphrase of an existing one reinforces it: 200)",
        description="The preference in the user's own words (`description`); without `category` the "
        "analyzer reads it from the text. A paraphrase of one the user has reinforces it (200, that "
        "preference); one that contradicts another on the same axis (short vs long answers...) supersedes it.",
    )
    def post(self, request: Request) -> Response:
        serializer = PreferenceInputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        row, created = preferences.preference_add_manual(user=subject_user(request), **serializer.validated_data)
        return Response(
            PreferenceOutputSerializer(row).data, status=status.HTTP_201_CREATED if created else status.HTTP_200_OK
        )


class PreferenceCheckInApi(UserDataApi):
    @extend_schema(
        responses=PreferencesOutputSerializer,
        summary="Preferences that faded: are these still accurate?",
        description="Learned preferences not reinforced for a while went inactive (never deleted); ask the "
        "user whether they still hold, and switch the ones that do back on.",
    )
    def get(self, request: Request) -> Response:
        rows = selectors.preference_check_in_list(user=subject_user(request))
        return Response({"preferences": PreferenceOutputSerializer(rows, many=True).data})


class PreferenceToggleApi(UserDataApi):
    @extend_schema(
        request=ToggleInputSerializer,
        responses=PreferenceOutputSerializer,
        summary="Switch a preference on or off",
        description='`{"active": false}` stops injecting it (kept, listed as switched off); `true` brings it '
        "back. Another user's id is a 404.",
    )
    def patch(self, request: Request, preference_id: int) -> Response:
        preference = selectors.preference_get(user=subject_user(request), preference_id=preference_id)
        if preference is None:
            raise NotFound("No such preference.")
        serializer = ToggleInputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        row = preferences.preference_set_active(preference=preference, active=serializer.validated_data["active"])
        return Response(PreferenceOutputSerializer(row).data)


class PreferenceDetailApi(UserDataApi):
    @extend_schema(
        request=None,
        responses={204: None},
        summary="Forget a preference",
        description="Deletes the preference; nothing of it is injected again. Another user's id is a 404.",
    )
    def delete(self, request: Request, preference_id: int) -> Response:
        preference = selectors.preference_get(user=subject_user(request), preference_id=preference_id)
        if preference is None:
            raise NotFound("No such preference.")
        preferences.preference_delete(preference=preference)
        return Response(status=status.HTTP_204_NO_CONTENT)


class PreferenceUndoOutputSerializer(serializers.Serializer):
    undone = serializers.CharField(help_text="The change undone: switched_off, switched_on, added or deleted.")
    preference = PreferenceOutputSerializer(
        allow_null=True, help_text="The preference as it is now; null when undoing its addition removed it."
    )


class PreferenceUndoApi(UserDataApi):
    @extend_schema(
        request=None,
        responses=PreferenceUndoOutputSerializer,
        summary="Undo your last change to a preference (a switch, an addition, a deletion)",
        description=UNDO_HELP,
    )
    def post(self, request: Request, preference_id: int) -> Response:
        user = subject_user(request)
        NoInputSerializer(data=request.data).is_valid(raise_exception=True)
        action, row = preferences.preference_undo(user=user, preference_id=preference_id)
        return Response(PreferenceUndoOutputSerializer({"undone": action, "preference": row}).data)
