"""An owner's request to share a private item, beside the items themselves: mounted under /api/v1/
and under /api/pdb/v1/reggie/ (see config/urls.py)."""

from django.urls import path

from promotions.apis.shares import MemoryShareApi, PreferenceShareApi, WorkflowShareApi

urlpatterns = [
    path("memories/<uuid:item_id>/share", MemoryShareApi.as_view()),
    path("preferences/<int:item_id>/share", PreferenceShareApi.as_view()),
    path("workflows/<int:item_id>/share", WorkflowShareApi.as_view()),
]
