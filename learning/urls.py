from django.urls import path

from learning.apis import context, memories, messages, preferences, responses, taste, workflows

# The management contract of the source design; mounted twice (see config/urls.py). Sharing a
# memory or preference is a promotion: its routes are the promotions app's.
management = [
    path("preferences", preferences.PreferenceListCreateApi.as_view()),
    path("preferences/check-in", preferences.PreferenceCheckInApi.as_view()),
    path("preferences/<int:preference_id>/toggle", preferences.PreferenceToggleApi.as_view()),
    path("preferences/<int:preference_id>", preferences.PreferenceDetailApi.as_view()),
    path("preferences/<int:preference_id>/undo", preferences.PreferenceUndoApi.as_view()),
    path("workflows", workflows.WorkflowListApi.as_view()),
    path("workflows/<int:workflow_id>/toggle", workflows.WorkflowToggleApi.as_view()),
    path("workflows/<int:workflow_id>", workflows.WorkflowDetailApi.as_view()),
    path("workflows/<int:workflow_id>/undo", workflows.WorkflowUndoApi.as_view()),
    path("context", context.ContextApi.as_view()),
    path("memories", memories.MemoryListApi.as_view()),
    path("memories/<str:memory_id>", memories.MemoryDetailApi.as_view()),
    path("memories/<str:memory_id>/undo", memories.MemoryUndoApi.as_view()),
    path("taste-patterns", taste.TastePatternListApi.as_view()),
    path("taste-patterns/<int:pattern_id>/stop", taste.TastePatternStopApi.as_view()),
    path("taste-patterns/<int:pattern_id>/resume", taste.TastePatternResumeApi.as_view()),
    path("taste-patterns/<int:pattern_id>/undo", taste.TastePatternUndoApi.as_view()),
]

urlpatterns = [
    path("messages", messages.MessageCreateApi.as_view(), name="messages"),
    path("messages/<str:message_id>", messages.MessageDetailApi.as_view(), name="message"),
    path("commands/runs", taste.CommandRunApi.as_view(), name="command-runs"),
    path("commands/decisions", taste.CommandDecisionApi.as_view(), name="command-decisions"),
    path("responses/feedback", responses.ResponseFeedbackApi.as_view(), name="response-feedback"),
    *management,
]
