"""
The Django app, registered as an Open edX LMS plugin (entry point ``lms.djangoapp``): edx-platform
adds it to INSTALLED_APPS and applies settings.py's ``plugin_settings`` to its settings. ready()
connects the activation publisher and checks, loudly, what later settings may have undone.
"""

import importlib.util
import logging

from django.apps import AppConfig
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.utils.module_loading import import_string
from edx_django_utils.plugins import PluginSettings, PluginURLs
from openedx_events.tooling import OpenEdxPublicSignal

# Defines the activation event when Django imports the app configs, before any app's ready().
from . import events
from .conf import ACTIVATED_EVENT_TYPE, setting
from .roles import ROLE_FUNCTION
from .settings import PIPELINE_STEPS, without_steps

log = logging.getLogger(__name__)

# edx-platform's ProjectType.LMS and SettingsType values (openedx/core/djangoapps/plugins/constants.py).
# edx-platform's own "test" settings get test_settings.py: enforcement and publishing off, so
# the platform's suite is not refused every enrollment.
LMS = "lms.djangoapp"
SETTINGS_MODULES = {"common": "settings", "production": "settings", "devstack": "settings", "test": "test_settings"}


class CourseAccessGroupsOpenedxConfig(AppConfig):
    name = "course_access_groups_openedx"
    verbose_name = "Course Access Groups (LMS side)"

    plugin_app = {
        # The console's link, a page of the LMS at /course_access_groups/ (console.py): edx-platform's
        # lms/urls.py adds every plugin's URLs (get_plugin_url_patterns).
        PluginURLs.CONFIG: {
            LMS: {PluginURLs.NAMESPACE: "course_access_groups", PluginURLs.REGEX: r"^course_access_groups/",
                  PluginURLs.RELATIVE_PATH: "urls"},
        },
        PluginSettings.CONFIG: {
            LMS: {settings_type: {PluginSettings.RELATIVE_PATH: module} for settings_type, module in SETTINGS_MODULES.items()},
        },
    }

    def ready(self):
        check_event_type()
        check_filters()
        check_event_bus()
        check_mfes()
        check_role_function()
        connect_activation_receiver()


def connect_activation_receiver():
    """Connects the publisher to the activation signal that COURSE_ACCESS_GROUPS names and to User saves."""
    from .publish import connect  # pylint: disable=import-outside-toplevel

    path = setting("ACTIVATION_SIGNAL")
    try:
        signal = import_string(path)
    except ImportError as exc:
        # Without it Registration.activate() is not heard: a deployment error, said at start-up.
        raise ImproperlyConfigured(f"COURSE_ACCESS_GROUPS['ACTIVATION_SIGNAL']: cannot import {path!r} ({exc})") from exc
    connect(signal)
    return signal


def check_event_type():
    """The event type must still be the plugin's signal: another definition would get its events."""
    if OpenEdxPublicSignal.get_signal_by_type(ACTIVATED_EVENT_TYPE) is not events.USER_ACCOUNT_ACTIVATED_EVENT:
        raise ImproperlyConfigured(f"{ACTIVATED_EVENT_TYPE} is defined by another package than course_access_groups_openedx")


def check_filters():
    """
    The steps must be first and not silent in the final OPEN_EDX_FILTERS_CONFIG: Tutor's Python
    patches and other plugins run after plugin_settings() and may have replaced it. Enforcement
    that silently stopped would let everyone in, so start-up stops instead.
    """
    filters = getattr(settings, "OPEN_EDX_FILTERS_CONFIG", None) or {}
    if not setting("CONFIGURE_FILTERS"):
        # Turned off after plugin_settings() ran (a Tutor Python settings patch): the steps it put
        # in come out here, so the switch works wherever it is set.
        if filters:
            settings.OPEN_EDX_FILTERS_CONFIG = without_steps(filters)
        return
    wrong = []
    for filter_type, step in PIPELINE_STEPS.items():
        config = filters.get(filter_type)
        pipeline = config.get("pipeline") if isinstance(config, dict) else None
        if not pipeline or pipeline[0] != step or config.get("fail_silently", True) is not False:
            wrong.append(filter_type)
    if wrong:
        raise ImproperlyConfigured(
            "Course Access Groups: OPEN_EDX_FILTERS_CONFIG was changed after the plugin configured it; "
            f"{', '.join(wrong)} must run {', '.join(PIPELINE_STEPS[t] for t in wrong)} first with "
            "fail_silently False (use course_access_groups_openedx.settings.with_steps(), or set "
            "COURSE_ACCESS_GROUPS['CONFIGURE_FILTERS'] = False to run without enforcement)"
        )


def check_event_bus():
    """Without a working Kafka producer every activation is dropped in silence by openedx-events: said here."""
    if not setting("PUBLISH_ACTIVATIONS"):
        return
    producer = getattr(settings, "EVENT_BUS_PRODUCER", None) or ""
    if "kafka" not in str(producer):
        log.error(
            "Course Access Groups: EVENT_BUS_PRODUCER is %r, not edx_event_bus_kafka.create_producer; account "
            "activations do not reach the service's Kafka (Tutor sets the Redis bus after the YAML: see the README)",
            producer,
        )
    elif importlib.util.find_spec("confluent_kafka") is None:
        log.error("Course Access Groups: confluent-kafka is not installed; the Kafka event bus drops every account activation")
    if ACTIVATED_EVENT_TYPE in (getattr(settings, "EVENT_BUS_PRODUCER_CONFIG", None) or {}):
        log.error(
            "Course Access Groups: EVENT_BUS_PRODUCER_CONFIG has an entry for %s; the plugin publishes the event itself, "
            "so it would be sent twice: remove the entry",
            ACTIVATED_EVENT_TYPE,
        )


def check_mfes():
    """
    Pages an MFE replaces never run the filter that hides them: the learner-dashboard MFE redirects
    before DashboardRenderStarted, the catalog MFE before CourseAboutRenderStarted (tutor-mfe turns
    both on). Said at start-up; the enrollment step still applies.
    """
    features = getattr(settings, "FEATURES", None) or {}
    if getattr(settings, "LEARNER_HOME_MICROFRONTEND_URL", None):
        log.warning(
            "Course Access Groups: the learner-dashboard MFE is configured (LEARNER_HOME_MICROFRONTEND_URL); "
            "when it is on, DashboardRenderStarted never runs and dashboards list every enrollment"
        )
    if getattr(settings, "ENABLE_CATALOG_MICROFRONTEND", False) or features.get("ENABLE_CATALOG_MICROFRONTEND"):
        log.warning(
            "Course Access Groups: the catalog MFE is on (ENABLE_CATALOG_MICROFRONTEND); it redirects about pages "
            "before CourseAboutRenderStarted runs, so private about pages are not hidden"
        )


def check_role_function():
    """Settings after plugin_settings() may replace SYSTEM_WIDE_ROLE_CLASSES: then no LMS token names an administrator."""
    if ROLE_FUNCTION not in (getattr(settings, "SYSTEM_WIDE_ROLE_CLASSES", None) or []):
        log.error(
            "Course Access Groups: SYSTEM_WIDE_ROLE_CLASSES lacks %s (later settings replaced it); the LMS's JWTs name no "
            "organization administrator: add it back (course_access_groups_openedx.settings.with_role_function())",
            ROLE_FUNCTION,
        )
