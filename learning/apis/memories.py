"""What the assistant remembers about the user: list, read, edit, forget and undo."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response

from accounts.actors import Actor
from config.api import ChoiceField, StrictCharField, StrictInputSerializer
from config.schema import error_example
from learning import selectors
from learning.apis.common import UNDO_HELP, NoInputSerializer, UserDataApi, subject_user
from learning.models import Memory
from learning.services import memories


class MemoryOutputSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    kind = serializers.CharField()
    content = serializers.CharField()
    confidence = serializers.FloatField()
    visibility = serializers.CharField()
    created_at = serializers.DateTimeField()
    edited_at = serializers.DateTimeField(allow_null=True)


class MemoryListOutputSerializer(serializers.Serializer):
    memories = MemoryOutputSerializer(many=True)


class MemoryUpdateInputSerializer(StrictInputSerializer):
    content = StrictCharField(required=False, max_length=4000)
    kind = ChoiceField(choices=Memory.Kind.choices, required=False)


class MemoryListApi(UserDataApi):
    @extend_schema(
        responses=MemoryListOutputSerializer,
        summary="What the assistant remembers about you",
        description="The user's private memories (durable statements: facts, commitments, lessons...) and "
        "the team and project memories they may see (shared through applied promotions).",
    )
    def get(self, request: Request) -> Response:
        return Response(
            {
                "memories": MemoryOutputSerializer(
                    selectors.memory_list(user=subject_user(request), within=Actor.from_request(request).limit_q()),
                    many=True,
                ).data
            }
        )


class MemoryDetailApi(UserDataApi):
    """A memory the user may see; only their own private ones are edited or deleted here (a shared
    copy answers 409: it changes only through the promotion that shared it)."""

    def _memory(self, request: Request, memory_id: str) -> Memory:
        memory = selectors.memory_get_visible(
            user=subject_user(request), memory_id=memory_id, within=Actor.from_request(request).limit_q()
        )
        if memory is None:
            raise NotFound("No such memory.")
        return memory

    @extend_schema(
        responses=MemoryOutputSerializer,
        summary="One memory",
        description="A memory the user may see, by id (404 otherwise).",
    )
    def get(self, request: Request, memory_id: str) -> Response:
        return Response(MemoryOutputSerializer(self._memory(request, memory_id)).data)

    @extend_schema(
        request=MemoryUpdateInputSerializer,
        responses=MemoryOutputSerializer,
        summary="Edit one of your memories",
        description="Change the content or kind of one of your own private memories. A shared copy is a 409 "
        "naming `visibility` (it changes only through its promotion); content that duplicates another of "
        "your memories is a 409 naming `content`.",
        examples=[
            error_example(
                409,
                "conflict",
                "A shared memory changes only through the promotion that shared it.",
                field="visibility",
                name="shared_copy",
            ),
            error_example(
                409, "conflict", "You already have a memory with this content.", field="content", name="duplicate"
            ),
        ],
    )
    def patch(self, request: Request, memory_id: str) -> Response:
        memory = self._memory(request, memory_id)
        serializer = MemoryUpdateInputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        row = memories.memory_update(memory=memory, **serializer.validated_data)
        return Response(MemoryOutputSerializer(row).data)

    @extend_schema(
        request=None,
        responses={204: None},
        summary="Forget one of your memories",
        description="Deletes one of your own private memories; a shared copy is a 409 naming `visibility`.",
        examples=[
            error_example(
                409,
                "conflict",
                "A shared memory is withdrawn through the promotion that shared it.",
                field="visibility",
                name="shared_copy",
            )
        ],
    )
    def delete(self, request: Request, memory_id: str) -> Response:
        memories.memory_delete(memory=self._memory(request, memory_id))
        return Response(status=status.HTTP_204_NO_CONTENT)


class MemoryUndoOutputSerializer(serializers.Serializer):
    undone = serializers.CharField(help_text="The change undone: edited or deleted.")
    memory = MemoryOutputSerializer()


class MemoryUndoApi(UserDataApi):
    @extend_schema(
        request=None,
        responses=MemoryUndoOutputSerializer,
        summary="Undo your last change to one of your memories (an edit, a deletion)",
        description=UNDO_HELP + " A memory with the same text since is a 409 naming `content`.",
    )
    def post(self, request: Request, memory_id: str) -> Response:
        user = subject_user(request)
        NoInputSerializer(data=request.data).is_valid(raise_exception=True)
        action, row = memories.memory_undo(user=user, memory_id=memory_id)
        return Response(MemoryUndoOutputSerializer({"undone": action, "memory": row}).data)
