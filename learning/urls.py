from django.urls import path

from learning import apis

# The management contract of the source design; mounted twice (see config/urls.py).
management = [
    path("preferences", apis.PreferenceListCreateApi.as_view()),
    path("preferences/check-in", apis.PreferenceCheckInApi.as_view()),
    path("preferences/<int:preference_id>/toggle", apis.PreferenceToggleApi.as_view()),
    path("preferences/<int:preference_id>", apis.PreferenceDetailApi.as_view()),
    path("workflows", apis.WorkflowListApi.as_view()),
    path("workflows/<int:workflow_id>/toggle", apis.WorkflowToggleApi.as_view()),
    path("workflows/<int:workflow_id>", apis.WorkflowDetailApi.as_view()),
    path("context", apis.ContextApi.as_view()),
    path("memories", apis.MemoryListApi.as_view()),
    path("memories/<uuid:item_id>/share", apis.MemoryShareApi.as_view()),
    path("preferences/<int:item_id>/share", apis.PreferenceShareApi.as_view()),
    path("taste-patterns", apis.TastePatternListApi.as_view()),
    path("taste-patterns/<int:pattern_id>/stop", apis.TastePatternStopApi.as_view()),
]

urlpatterns = [
    path("messages", apis.MessageCreateApi.as_view(), name="messages"),
    path("commands/runs", apis.CommandRunApi.as_view(), name="command-runs"),
    path("commands/decisions", apis.CommandDecisionApi.as_view(), name="command-decisions"),
    path("responses/feedback", apis.ResponseFeedbackApi.as_view(), name="response-feedback"),
    *management,
]
