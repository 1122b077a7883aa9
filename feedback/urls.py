from django.urls import path

from feedback import apis

urlpatterns = [
    path("events", apis.FeedbackEventListCreateApi.as_view(), name="feedback-events"),
    path("events/bulk", apis.FeedbackEventBulkApi.as_view(), name="feedback-events-bulk"),
    path("events/<uuid:event_id>", apis.FeedbackEventDetailApi.as_view(), name="feedback-event-detail"),
    path("tasks", apis.TaskFeedbackListCreateApi.as_view(), name="task-feedback"),
    path("tasks/<uuid:feedback_id>", apis.TaskFeedbackDetailApi.as_view(), name="task-feedback-detail"),
]
