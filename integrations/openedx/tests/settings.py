"""
Django settings of the plugin's tests: an LMS's settings as far as the plugin sees them, the
service, Kafka and the schema registry taken from the environment that
test/integration/openedx-plugin.test.ts sets (conftest.py says which variables).
"""

import os
import sys

from course_access_groups_openedx.settings import plugin_settings

SECRET_KEY = "tests-only"
USE_TZ = True
INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sites",
    "openedx_events",
    "edx_event_bus_kafka",
    # edx-platform's student app as far as the tests reproduce it (tests/standins/README.md).
    "common.djangoapps.student.apps.StudentConfig",
    "openedx.core.djangoapps.site_configuration.apps.SiteConfigurationConfig",
    # The LMS's course table, read by the sync command (tests/test_sync.py).
    "openedx.core.djangoapps.content.course_overviews.apps.CourseOverviewsConfig",
    "course_access_groups_openedx.apps.CourseAccessGroupsOpenedxConfig",
]
# The tests that reproduce the LMS's saves and transactions write users, invitations and
# enrollments here (tests/test_lms_paths.py); the others use unsaved users.
DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"}}
ROOT_URLCONF = "tests.urls"
LOGGING_CONFIG = None

COURSE_ACCESS_GROUPS = {
    "SERVICE_URL": os.environ.get("CAG_SERVICE_URL", ""),
    "SERVICE_TOKEN": os.environ.get("CAG_SERVICE_TOKEN", ""),
    "ORGANIZATION": os.environ.get("CAG_ORGANIZATION", ""),
    # The real service on a loaded test machine (two Jest workers beside it) may take more than
    # the default 0.5 s for a call; the tests of a slow or silent service set their own (0.3 s).
    "TIMEOUT": 5.0,
}

# The LMS's asymmetric JWT settings as Tutor renders them (common_all.py), the key made by
# test/integration/openedx-plugin.test.ts, whose service trusts its public half (LMS_JWT_*).
JWT_AUTH = {
    "JWT_ISSUER": os.environ.get("CAG_LMS_JWT_ISSUER", ""),
    "JWT_AUDIENCE": os.environ.get("CAG_LMS_JWT_AUDIENCE", ""),
    "JWT_PRIVATE_SIGNING_JWK": os.environ.get("CAG_LMS_JWT_PRIVATE_JWK", ""),
    "JWT_SIGNING_ALGORITHM": "RS512",
    "JWT_SUPPORTED_VERSION": "1.2.0",
}
SYSTEM_WIDE_ROLE_CLASSES = []

# The event bus as an LMS configures it (docs/events.md, "Connecting an Open edX LMS").
EVENTS_SERVICE_NAME = "lms"
EVENT_BUS_PRODUCER = "edx_event_bus_kafka.create_producer"
EVENT_BUS_KAFKA_BOOTSTRAP_SERVERS = os.environ.get("KAFKA_BROKERS", "")
EVENT_BUS_KAFKA_SCHEMA_REGISTRY_URL = os.environ.get("SCHEMA_REGISTRY_URL", "")
EVENT_BUS_TOPIC_PREFIX = os.environ.get("CAG_TOPIC_PREFIX", "")
OPEN_EDX_FILTERS_CONFIG = {}

# What edx-platform's add_plugins() does with this module (tests/test_plugin.py runs the real one).
plugin_settings(sys.modules[__name__])
