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


def test_a_multi_site_lms_takes_the_organization_of_the_site_the_account_was_created_on(new_user_id, service_settings, caplog):
    from django.contrib.auth.models import User
    from django.contrib.sites.models import Site

    from common.djangoapps.student.models import UserAttribute
    from openedx.core.djangoapps.site_configuration.models import SiteConfiguration

    service_settings(ORGANIZATION="FallbackX")
    for domain, orgs in (("b.example.org", ["SiteB"]), ("multi.example.org", ["SiteM", "SiteN"])):
        SiteConfiguration.objects.create(site=Site.objects.create(domain=domain, name=domain), enabled=True,
                                         site_values={"course_org_filter": orgs})
    user = User.objects.create(id=new_user_id(), username="multisite", email="m@example.org")
    try:
        # The request is on site A (the current site), the account was created on site B.
        site_configuration.VALUES["course_org_filter"] = ["SiteA"]
        assert site_course_org_filter(user) == "SiteA"  # no created_on_site: the current site
        UserAttribute.set_user_attribute(user, "created_on_site", "b.example.org")
        assert site_course_org_filter(user) == "SiteB"
        UserAttribute.set_user_attribute(user, "created_on_site", "multi.example.org")
        assert site_course_org_filter(user) is None  # several organizations: refused, not guessed
        assert f"the site of user {user.id} names 2 organizations" in caplog.text
        UserAttribute.set_user_attribute(user, "created_on_site", "unknown.example.org")
        site_configuration.VALUES.clear()
        assert site_course_org_filter(user) == "FallbackX"  # no site names one
    finally:
        site_configuration.VALUES.clear()
