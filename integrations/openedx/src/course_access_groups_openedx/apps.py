"""
The Django app, registered as an Open edX LMS plugin (entry point ``lms.djangoapp``): edx-platform
adds it to INSTALLED_APPS and applies settings.py's ``plugin_settings`` to its settings.
"""

from django.apps import AppConfig
from django.core.exceptions import ImproperlyConfigured
from django.utils.module_loading import import_string
from edx_django_utils.plugins import PluginSettings

# Defines the activation event when Django imports the app configs, before any app's ready():
# openedx_events' ready() looks up every event type of EVENT_BUS_PRODUCER_CONFIG.
from . import events  # noqa: F401  pylint: disable=unused-import
from .conf import setting

# edx-platform's ProjectType.LMS and SettingsType values (openedx/core/djangoapps/plugins/constants.py).
LMS = "lms.djangoapp"
SETTINGS_TYPES = ("common", "production", "devstack", "test")


class CourseAccessGroupsOpenedxConfig(AppConfig):
    name = "course_access_groups_openedx"
    verbose_name = "Course Access Groups (LMS side)"

    plugin_app = {
        PluginSettings.CONFIG: {
            LMS: {settings_type: {PluginSettings.RELATIVE_PATH: "settings"} for settings_type in SETTINGS_TYPES},
        },
    }

    def ready(self):
        connect_activation_receiver()


def connect_activation_receiver():
    """Connects the publisher to the activation signal that COURSE_ACCESS_GROUPS names (edx-platform's by default)."""
    from .receivers import publish_activation  # pylint: disable=import-outside-toplevel

    path = setting("ACTIVATION_SIGNAL")
    try:
        signal = import_string(path)
    except ImportError as exc:
        # Without it no activation is ever published: a deployment error, said at start-up.
        raise ImproperlyConfigured(f"COURSE_ACCESS_GROUPS['ACTIVATION_SIGNAL']: cannot import {path!r} ({exc})") from exc
    signal.connect(publish_activation, dispatch_uid="course_access_groups_openedx.publish_activation")
    return signal
