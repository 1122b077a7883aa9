from django.urls import path

from retrieval import apis

urlpatterns = [
    path("documents", apis.DocumentImportApi.as_view(), name="retrieval-documents"),
    path("search", apis.SearchApi.as_view(), name="retrieval-search"),
    path("feedback", apis.RetrievalFeedbackApi.as_view(), name="retrieval-feedback"),
    path("projects/<slug:slug>/settings", apis.ProjectSettingsApi.as_view(), name="retrieval-project-settings"),
]
