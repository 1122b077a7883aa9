"""What the assistant remembers about the user."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from learning import selectors
from learning.apis.common import subject_user


class MemoryOutputSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    kind = serializers.CharField()
    content = serializers.CharField()
    confidence = serializers.FloatField()
    visibility = serializers.CharField()
    created_at = serializers.DateTimeField()


class MemoryListApi(APIView):
    @extend_schema(responses=MemoryOutputSerializer(many=True), summary="What the assistant remembers about you")
    def get(self, request: Request) -> Response:
        return Response(
            {"memories": MemoryOutputSerializer(selectors.memory_list(user=subject_user(request)), many=True).data}
        )
