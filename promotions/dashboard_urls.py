"""The learning dashboard, under /console/dashboard/ (the review console's other pages: config/urls.py)."""

from django.urls import path

from promotions import dashboard_views

urlpatterns = [path("", dashboard_views.learning_dashboard, name="console-dashboard")]
