"""
The sync command the Tutor plugin's init task runs (``./manage.py lms course_access_groups_sync``)
over an LMS-shaped database: courses in edx-platform's CourseOverview (its stand-in) and learners
who existed before the plugin (made with bulk_create, which sends no signal, so nothing was
published for them), sent through the real openedx-events and edx-event-bus-kafka and applied by
the real service. Run twice: the second run changes nothing.
"""

import io
import logging
import time
from datetime import datetime, timezone

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from openedx.core.djangoapps.content.course_overviews.models import CourseOverview

pytestmark = pytest.mark.django_db(transaction=True)


def wait_for(get, path, ready):
    """GETs path until ready(status, body) or a minute has passed; returns the last answer."""
    deadline = time.monotonic() + 60
    status, body = get(path)
    while not ready(status, body) and time.monotonic() < deadline:
        time.sleep(0.2)
        status, body = get(path)
    return status, body


def sync(**options):
    out = io.StringIO()
    call_command("course_access_groups_sync", stdout=out, **options)
    return out.getvalue()


def test_the_sync_command_brings_existing_courses_and_active_learners_to_the_service(world, new_user_id, admin_get, caplog):
    org = world["organization"]
    run = new_user_id()
    keys = [f"course-v1:{org}+SYNC{run}x{n}+2026" for n in range(3)]
    # One with every date, one with none (the event then gets edx-platform's default start).
    dates = {"start": datetime(2026, 1, 5, tzinfo=timezone.utc), "end": datetime(2026, 6, 30, tzinfo=timezone.utc),
             "enrollment_start": datetime(2025, 12, 1, tzinfo=timezone.utc), "enrollment_end": datetime(2026, 1, 31, tzinfo=timezone.utc)}
    CourseOverview.objects.bulk_create([
        CourseOverview(id=key, org=org, display_name=f"Synced course {n}", self_paced=n == 0, **(dates if n < 2 else {}))
        for n, key in enumerate(keys)
    ])
    member, other, inactive = new_user_id(), new_user_id(), new_user_id()
    User.objects.bulk_create([
        User(id=member, username=f"synced{member}", email=f"synced{member}@{world['rule_domain']}", is_active=True),
        User(id=other, username=f"synced{other}", email=f"synced{other}@elsewhere.org", is_active=True),
        User(id=inactive, username=f"synced{inactive}", email=f"synced{inactive}@{world['rule_domain']}", is_active=False),
    ])

    output = sync(progress=2)
    assert output.splitlines() == [
        "courses: 2 sent", "courses: 3 sent", "learners: 2 sent", "learners: 2 sent, 0 without an organization skipped",
    ]
    # The library logs delivery and registry failures instead of raising them.
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []

    for n, key in enumerate(keys):
        status, body = wait_for(admin_get, f"courses/{key}/", lambda s, b: s == 200)
        assert (status, body["id"], body["name"]) == (200, key, f"Synced course {n}")
    status, body = wait_for(admin_get, f"users/{member}/", lambda s, b: s == 200 and b["membership"] is not None)
    assert (status, body["email"], body["membership"]["group"]) == (200, f"synced{member}@{world['rule_domain']}", world["group"])
    status, body = wait_for(admin_get, f"users/{other}/", lambda s, b: s == 200)
    assert (status, body["membership"]) == (200, None)
    # Not active: not sent (its activation will be).
    assert admin_get(f"users/{inactive}/")[0] == 404

    # Again: the same events, the same state.
    assert sync().splitlines() == ["courses: 3 sent", "learners: 2 sent, 0 without an organization skipped"]
    status, body = wait_for(admin_get, f"users/{member}/", lambda s, b: s == 200)
    assert body["membership"]["group"] == world["group"]
    assert [admin_get(f"courses/{key}/")[1]["name"] for key in keys] == [f"Synced course {n}" for n in range(3)]


def test_the_sync_command_skips_learners_without_an_organization(new_user_id, service_settings):
    service_settings(ORGANIZATION="")
    user_id = new_user_id()
    User.objects.bulk_create([User(id=user_id, username=f"nobody{user_id}", email="nobody@example.org", is_active=True)])
    assert sync().splitlines()[-1] == "learners: 0 sent, 1 without an organization skipped"
