"""
Course Access Groups on Tutor: installs the LMS plugin and confluent-kafka into the openedx image,
moves the LMS and Studio to the Kafka event bus (every platform producer, not only this one's),
publishes registration, login and Studio's catalog changes to the service's topics, and runs the
service (its api and consumer roles) on Tutor's MongoDB, against an external Kafka and schema
registry or a single-node pair of its own. The JWT secret is made once (CONFIG_UNIQUE) and the
LMS's service token is signed from it when the environment is rendered.
"""

import base64
import hashlib
import hmac
import json
import os
from glob import glob
from urllib.parse import quote

from tutor import hooks

from . import __version__

PATCHES = os.path.join(os.path.dirname(__file__), "patches")

hooks.Filters.CONFIG_DEFAULTS.add_items([
    ("COURSE_ACCESS_GROUPS_VERSION", __version__),
    # The service's image, built from the project's Dockerfile (`docker build -t <this> .`).
    ("COURSE_ACCESS_GROUPS_DOCKER_IMAGE", "course-access-groups:{{ COURSE_ACCESS_GROUPS_VERSION }}"),
    # What pip installs into the openedx image: the LMS plugin (a requirement, a URL or a path).
    ("COURSE_ACCESS_GROUPS_OPENEDX_PLUGIN", "course-access-groups-openedx=={{ COURSE_ACCESS_GROUPS_VERSION }}"),
    ("COURSE_ACCESS_GROUPS_CONFLUENT_KAFKA", "confluent-kafka[avro,schemaregistry]>=2.0,<3"),
    # The organization of every learner of a single-site platform (the service's DEFAULT_ORGANIZATION).
    ("COURSE_ACCESS_GROUPS_ORGANIZATION", ""),
    ("COURSE_ACCESS_GROUPS_MONGODB_DATABASE", "course_access_groups"),
    # Empty: a single-node Kafka and schema registry of the plugin's own (RUN_KAFKA).
    ("COURSE_ACCESS_GROUPS_RUN_KAFKA", True),
    ("COURSE_ACCESS_GROUPS_KAFKA_BOOTSTRAP_SERVERS", "{% if COURSE_ACCESS_GROUPS_RUN_KAFKA %}course-access-groups-kafka:9092{% endif %}"),
    ("COURSE_ACCESS_GROUPS_SCHEMA_REGISTRY_URL",
     "{% if COURSE_ACCESS_GROUPS_RUN_KAFKA %}http://course-access-groups-registry:8080/apis/ccompat/v7{% endif %}"),
    # The versions the project's local stack runs and its tests use (scripts/kafka, scripts/registry).
    ("COURSE_ACCESS_GROUPS_KAFKA_DOCKER_IMAGE", "apache/kafka:3.9.1"),
    ("COURSE_ACCESS_GROUPS_REGISTRY_DOCKER_IMAGE", "apicurio/apicurio-registry-mem:2.4.2.Final"),
    # EVENT_BUS_TOPIC_PREFIX of the LMS and Studio: topics are <prefix>-user-lifecycle and so on.
    ("COURSE_ACCESS_GROUPS_TOPIC_PREFIX", "openedx"),
    # The service token's expiry (seconds since the epoch); a new JWT secret replaces the token too.
    ("COURSE_ACCESS_GROUPS_SERVICE_TOKEN_EXPIRES", 4102444800),
])

hooks.Filters.CONFIG_UNIQUE.add_items([
    ("COURSE_ACCESS_GROUPS_JWT_SECRET", "{{ 48|random_string }}"),
])


def _b64(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def service_token(secret, expires):
    """An HS256 JWT with the role `service` (access decisions for the LMS), signed with the service's secret."""
    header = _b64(json.dumps({"alg": "HS256", "typ": "JWT"}, separators=(",", ":")).encode())
    claims = _b64(json.dumps({"user_id": 0, "roles": ["service"], "exp": int(expires)}, separators=(",", ":")).encode())
    signature = hmac.new(str(secret).encode(), f"{header}.{claims}".encode(), hashlib.sha256).digest()
    return f"{header}.{claims}.{_b64(signature)}"


def userinfo(text):
    """A MongoDB URL's user name or password, every reserved character escaped (Jinja's urlencode keeps `/`)."""
    return quote(str(text), safe="")


def checksum(text):
    """The SHA-256 of a rendered value: a pod template annotation that changes when the value does."""
    return hashlib.sha256(str(text).encode()).hexdigest()


hooks.Filters.ENV_TEMPLATE_FILTERS.add_items([
    ("course_access_groups_service_token", service_token),
    ("course_access_groups_checksum", checksum),
    ("course_access_groups_userinfo", userinfo),
])

for path in sorted(glob(os.path.join(PATCHES, "*"))):
    with open(path, encoding="utf-8") as patch_file:
        hooks.Filters.ENV_PATCHES.add_item((os.path.basename(path), patch_file.read()))
