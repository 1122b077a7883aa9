"""Erasure of a user (staff admins), mounted under /api/v1/ (see config/urls.py)."""

from django.urls import path

from promotions.apis.erasure import UserEraseApi

urlpatterns = [
    path("users/<int:user_id>/erase", UserEraseApi.as_view(), name="user-erase"),
]
