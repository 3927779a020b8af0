"""The plugin's LMS URLs, under /course_access_groups/ (apps.py, edx-platform's plugin URL hook)."""

from django.urls import path

from .console import console_link

urlpatterns = [path("", console_link, name="console")]
