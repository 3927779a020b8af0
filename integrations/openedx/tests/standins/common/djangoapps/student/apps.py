"""Test fixture only (tests/standins/README.md): edx-platform's student app, label ``student``."""

from django.apps import AppConfig


class StudentConfig(AppConfig):
    name = "common.djangoapps.student"
    label = "student"

    def ready(self):
        from . import models  # noqa: F401  pylint: disable=unused-import,import-outside-toplevel
