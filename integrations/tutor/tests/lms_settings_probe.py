"""
Run by the LMS plugin's Python (test_tutor_plugin.py): an LMS's settings module built in the
platform's order, then Tutor's rendered blocks executed over it, as lms/envs/tutor/production.py
does (``from lms.envs.production import *`` first, Tutor's partials after):

1. lms/envs/common.py: the platform's producer configuration (Studio's catalog event, off), then
   ``add_plugins(..., COMMON)``, which calls the plugin's plugin_settings();
2. lms/envs/production.py: the YAML's keys over the module, then ``add_plugins(..., PRODUCTION)``;
3. Tutor's common block (its Redis event bus, then the openedx-common-settings patches) and the
   openedx-lms-common-settings patches.

Prints the final event bus and plugin settings, the errors of the plugin's start-up checks, and
what edx-event-bus-kafka's own config reader makes of those settings: the librdkafka
configuration of its producer (load_common_settings) and its schema registry client's basic auth.
stdin: {"common": "...", "lms": "..."}.
"""

import json
import logging
import sys
import types

from django.conf import settings

from course_access_groups_openedx.settings import plugin_settings

blocks = json.load(sys.stdin)
lms = types.ModuleType("lms_settings")
lms.OPEN_EDX_FILTERS_CONFIG = {}
lms.EVENT_BUS_PRODUCER_CONFIG = {"org.openedx.content_authoring.course.catalog_info.changed.v1": {
    "course-catalog-info-changed": {"event_key_field": "catalog_info.course_key", "enabled": False}}}
plugin_settings(lms)
lms.COURSE_ACCESS_GROUPS = {"ACTIVATION_TOPIC": "from-yaml"}
lms.EVENT_BUS_PRODUCER = "edx_event_bus_kafka.create_producer"  # an operator's YAML, overwritten by Tutor
plugin_settings(lms)
exec(blocks["common"], lms.__dict__)  # noqa: S102  pylint: disable=exec-used
exec(blocks["lms"], lms.__dict__)  # noqa: S102  pylint: disable=exec-used

final = {name: value for name, value in vars(lms).items() if name.isupper()}
settings.configure(**final)
errors = []


class Collect(logging.Handler):
    def emit(self, record):
        if record.levelno >= logging.ERROR:
            errors.append(record.getMessage())


logging.getLogger("course_access_groups_openedx").addHandler(Collect())
from course_access_groups_openedx import apps  # noqa: E402  pylint: disable=wrong-import-position

try:
    apps.check_filters()
except Exception as exc:  # pylint: disable=broad-except
    errors.append(str(exc))
apps.check_event_bus()
from edx_event_bus_kafka.internal import config as kafka_config  # noqa: E402  pylint: disable=wrong-import-position

registry = kafka_config.get_schema_registry_client()
print(json.dumps({**{k: v for k, v in final.items() if k.startswith(("EVENT_BUS", "COURSE_ACCESS_GROUPS"))}, "ready_errors": errors,
                  "kafka_common": kafka_config.load_common_settings(),
                  "registry": None if registry is None else {"url": registry._rest_client.base_urls,  # pylint: disable=protected-access
                                                             "auth": registry._rest_client.auth}}))  # pylint: disable=protected-access
