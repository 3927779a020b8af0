"""
Publishing: edx-platform's USER_ACCOUNT_ACTIVATED signal (its stand-in, sent as
Registration.activate() sends it) through the plugin's receiver, the real openedx-events and
edx-event-bus-kafka (Avro through the schema registry), to the real service.
"""

import logging
import time

import pytest
from openedx.core.djangoapps.signals.signals import USER_ACCOUNT_ACTIVATED
from openedx.core.djangoapps.site_configuration import helpers as site_configuration
from openedx_events.event_bus import get_producer

from course_access_groups_openedx.organization import site_course_org_filter

from .conftest import learner

# Activations wait for the database transaction to commit (publish.py): real transactions.
pytestmark = pytest.mark.django_db(transaction=True)


class Registration:
    """The sender edx-platform names (common.djangoapps.student.models.Registration)."""


def activate(user):
    """As edx-platform's Registration.activate(): the signal, sent robustly."""
    return USER_ACCOUNT_ACTIVATED.send_robust(Registration, user=user)


def broken_resolver(user):
    raise RuntimeError("the organization lookup is down")


def test_an_activation_ends_as_a_membership_through_the_event_bus(world, new_user_id, admin_get, published, caplog):
    user = learner(new_user_id(), email=f"ann.activated@{world['rule_domain']}")
    user.first_name, user.last_name = "Ann", "Activated"

    assert [r for _, r in activate(user) if isinstance(r, Exception)] == []
    get_producer().prepare_for_shutdown()  # waits for the broker's acknowledgement
    # The library logs delivery and registry failures instead of raising them.
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []

    assert len(published) == 1
    assert published[0]["organization"] == world["organization"]
    assert published[0]["user"].pii.email == user.email

    deadline = time.monotonic() + 60
    status, body = admin_get(f"users/{user.id}/")
    while (status != 200 or body["membership"] is None) and time.monotonic() < deadline:
        time.sleep(0.2)
        status, body = admin_get(f"users/{user.id}/")
    assert (status, body) == (200, {
        "id": user.id,
        "username": user.username,
        "name": "Ann Activated",
        "email": user.email,
        "membership": {"id": body["membership"]["id"], "group": world["group"]},
    })


def test_without_an_organization_nothing_is_published_and_a_warning_names_the_user(new_user_id, service_settings, published, caplog):
    service_settings(ORGANIZATION="")
    user = learner(new_user_id())
    activate(user)
    assert published == []
    assert f"no organization for user {user.id}" in caplog.text


def test_a_failing_organization_lookup_is_logged_and_never_reaches_the_request(new_user_id, service_settings, published, caplog):
    service_settings(ORGANIZATION_RESOLVER="tests.test_activation.broken_resolver")
    user = learner(new_user_id())
    # Plain send(): an exception would reach the caller (the LMS view) here.
    USER_ACCOUNT_ACTIVATED.send(Registration, user=user)
    assert published == []
    assert f"could not publish the account activation of user {user.id}" in caplog.text


def test_an_unreachable_schema_registry_is_logged_by_the_producer_and_never_reaches_the_request(
    new_user_id, settings, closed_port, published, caplog
):
    settings.EVENT_BUS_KAFKA_SCHEMA_REGISTRY_URL = f"http://127.0.0.1:{closed_port}"
    user = learner(new_user_id())
    USER_ACCOUNT_ACTIVATED.send(Registration, user=user)
    assert len(published) == 1
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR and r.name.startswith("edx_event_bus_kafka")]
    assert len(errors) == 1 and errors[0].startswith("Error delivering message to Kafka event bus")


def test_a_multi_site_lms_takes_the_organization_of_the_sites_course_org_filter(service_settings):
    user = learner(1)
    service_settings(ORGANIZATION="FallbackX")
    site_configuration.VALUES.clear()
    assert site_course_org_filter(user) == "FallbackX"
    site_configuration.VALUES["course_org_filter"] = ["SiteX"]
    assert site_course_org_filter(user) == "SiteX"
    site_configuration.VALUES["course_org_filter"] = ["SiteX", "SiteY"]  # ambiguous: not this site's own
    assert site_course_org_filter(user) == "FallbackX"
    site_configuration.VALUES["course_org_filter"] = "SiteZ"
    assert site_course_org_filter(user) == "SiteZ"
    site_configuration.VALUES.clear()
