"""
Test fixture only (tests/standins/README.md): edx-platform's CourseOverview
(openedx/core/djangoapps/content/course_overviews/models.py, master), the LMS's table of every
course, with the fields the sync command reads. The key is a CharField here (a CourseKeyField
there, whose value is a CourseKey): the command reads it with ``str()``.
"""

from django.db import models


class CourseOverview(models.Model):
    id = models.CharField(max_length=255, primary_key=True)
    org = models.TextField(max_length=255, default="outdated_entry")
    display_name = models.TextField(null=True)
    start = models.DateTimeField(null=True)
    end = models.DateTimeField(null=True)
    enrollment_start = models.DateTimeField(null=True)
    enrollment_end = models.DateTimeField(null=True)
    self_paced = models.BooleanField(default=False)
    invitation_only = models.BooleanField(default=False)
    catalog_visibility = models.TextField(null=True)

    class Meta:
        app_label = "course_overviews"
