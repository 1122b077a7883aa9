from django.urls import path

from accounts import apis

urlpatterns = [
    path("me", apis.MeApi.as_view(), name="me"),
    path("projects", apis.ProjectListApi.as_view(), name="projects"),
    path("api-keys", apis.ApiKeyListCreateApi.as_view(), name="api-keys"),
    path("api-keys/<uuid:key_id>/projects", apis.ApiKeyProjectsApi.as_view(), name="api-key-projects"),
    path("api-keys/<uuid:key_id>/revoke", apis.ApiKeyRevokeApi.as_view(), name="api-key-revoke"),
]
