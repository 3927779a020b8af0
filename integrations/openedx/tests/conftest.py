"""
The world the tests run in: the real service on the local stack, started and filled by
test/integration/openedx-plugin.test.ts (npm test), which passes

  CAG_SERVICE_URL, CAG_SERVICE_TOKEN   the service and a token with the role `service`
  CAG_ADMIN_TOKEN                      a site administrator's token, to read the outcome
  CAG_ORGANIZATION, CAG_FIXTURE        the organization and its data (JSON, below)
  KAFKA_BROKERS, SCHEMA_REGISTRY_URL, CAG_TOPIC_PREFIX   the event bus the service consumes

CAG_FIXTURE: {"group": {"id", "name"}, "rule_domain", "users": {"member", "outsider"} (ids),
"courses": {"linked", "private", "public", "unknown"} (keys), "new_user_ids": [ids no one has]}.
"""

import json
import os
import socket
from types import SimpleNamespace

import pytest
import urllib3
from django.contrib.auth.models import AnonymousUser, User
from opaque_keys.edx.keys import CourseKey

from course_access_groups_openedx.events import USER_ACCOUNT_ACTIVATED_EVENT


def _env(name):
    value = os.environ.get(name)
    if not value:
        pytest.fail(f"{name} is not set: these tests run against the real service; run them with "
                    "`npx jest test/integration/openedx-plugin.test.ts` (or npm test)")
    return value


@pytest.fixture(scope="session")
def world():
    data = json.loads(_env("CAG_FIXTURE"))
    data["organization"] = _env("CAG_ORGANIZATION")
    data["service_url"] = _env("CAG_SERVICE_URL")
    _env("CAG_SERVICE_TOKEN")
    return data


@pytest.fixture(scope="session")
def new_user_id(world):
    """A user id the service has never seen, a new one per call."""
    ids = iter(world["new_user_ids"])
    return lambda: next(ids)


def learner(user_id, email="learner@example.org"):
    """An LMS user as the filters receive it (unsaved: the plugin reads attributes only)."""
    return User(id=user_id, username=f"learner{user_id}", email=email, first_name="Lee", last_name="Arner", is_active=True)


@pytest.fixture
def member(world):
    return learner(world["users"]["member"])


@pytest.fixture
def outsider(world):
    return learner(world["users"]["outsider"])


@pytest.fixture
def anonymous():
    return AnonymousUser()


def course_key(key):
    return CourseKey.from_string(key)


def course(key):
    """What the about page's context holds as `course` (the plugin reads `.id`)."""
    return SimpleNamespace(id=course_key(key))


def enrollment(key):
    """A dashboard's CourseEnrollment as the plugin reads it (`.course_id`)."""
    return SimpleNamespace(course_id=course_key(key))


@pytest.fixture
def admin_get(world):
    """GET on the service's admin API as the organization's site administrator: (status, JSON)."""
    http = urllib3.PoolManager(headers={"Authorization": f"Bearer {_env('CAG_ADMIN_TOKEN')}"})

    def get(path):
        response = http.request("GET", f"{world['service_url']}/course_access_groups/api/v1/{path}", timeout=5.0)
        return response.status, json.loads(response.data) if response.data else None

    return get


@pytest.fixture
def closed_port():
    """A local port nothing listens on: connections are refused."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def silent_port():
    """A local port that accepts connections (the kernel's backlog) and never answers."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(8)
    yield s.getsockname()[1]
    s.close()


@pytest.fixture
def service_settings(settings):
    """Changes COURSE_ACCESS_GROUPS keys for one test (the client is made again from them)."""

    def change(**values):
        settings.COURSE_ACCESS_GROUPS = {**settings.COURSE_ACCESS_GROUPS, **values}

    return change


@pytest.fixture
def published():
    """The activation events the plugin sends, as its in-process receivers get them (beside the bus)."""
    events = []

    def capture(signal, **kwargs):
        events.append(kwargs)

    USER_ACCOUNT_ACTIVATED_EVENT.connect(capture)
    yield events
    USER_ACCOUNT_ACTIVATED_EVENT.disconnect(capture)
