"""
The LMS's own call paths around the plugin, reproduced from edx-platform (master) with the real
openedx-filters, openedx-events, edx-event-bus-kafka and Django, real database transactions
(SQLite) and the real service:

- common/djangoapps/student/models/user.py: ``Registration.activate()`` and the User
  ``post_save`` receiver ``user_post_save_callback``, which calls ``CourseEnrollment.enroll`` for
  every ``CourseEnrollmentAllowed`` with ``auto_enroll`` inside the activating save, with no
  try/except (tests/standins/common/djangoapps/student/models.py);
- common/djangoapps/student/models/course_enrollment.py: ``CourseEnrollment.enroll`` runs the
  CourseEnrollmentStarted filter and turns its refusal into ``EnrollmentNotAllowed``;
- common/djangoapps/student/views/management.py ``activate_account`` under ``ATOMIC_REQUESTS``
  (one transaction per request): ``transaction.atomic()`` here;
- openedx/core/djangoapps/user_authn/views/password_reset.py: ``PasswordResetConfirmWrapper``
  (the legacy view) and ``LogistrationPasswordResetView`` (the API the Authn MFE calls) set
  ``is_active`` and save the user without sending USER_ACCOUNT_ACTIVATED; so does the Django
  admin's ``ModelAdmin.save_model`` (``obj.save()``);
- openedx_filters ``OpenEdxPublicFilter.run_pipeline``: a step that returns anything but a dict
  ends the pipeline.
"""

import time
import uuid

import pytest
from confluent_kafka import Consumer
from django.contrib.auth.models import User
from django.db import transaction
from openedx_events.event_bus import get_producer
from openedx_filters import PipelineStep
from openedx_filters.learning.filters import CourseEnrollmentStarted, DashboardRenderStarted

from common.djangoapps.student.models import (
    CourseAccessRole,
    CourseEnrollment,
    CourseEnrollmentAllowed,
    EnrollmentNotAllowed,
    Registration,
)
from course_access_groups_openedx.settings import plugin_settings

from .conftest import course_key, enrollment, learner

pytestmark = pytest.mark.django_db(transaction=True)

ENROLLMENT = "org.openedx.learning.course.enrollment.started.v1"


def new_account(new_user_id, email, is_active=False):
    """A saved account the service has never heard of, as registration leaves it (with its Registration)."""
    user_id = new_user_id()
    user = User.objects.create(id=user_id, username=f"new{user_id}", email=email, is_active=is_active)
    Registration().register(user)
    return user


def invite(email, key):
    """Staff invited this email to the course with auto-enrollment (the instructor dashboard's batch enroll)."""
    return CourseEnrollmentAllowed.objects.create(email=email, course_id=key, auto_enroll=True)


def activate_by_email_link(user):
    """activate_account under ATOMIC_REQUESTS: Registration.activate() in the request's transaction."""
    with transaction.atomic():
        Registration.objects.get(user=user).activate()


def register_without_activation_email(user):
    """Registration with activation emails skipped: the account is saved active at once."""
    with transaction.atomic():
        user.is_active = True
        user.save()


def change_email_to_invited(user, email):
    """An active learner confirms an email change to an invited address (the email is saved)."""
    with transaction.atomic():
        user.email = email
        user.save()


@pytest.mark.parametrize("unreachable", [False, True], ids=["service-refuses", "service-unreachable"])
@pytest.mark.parametrize("path", ["activation", "registration-without-activation-email", "email-change"])
def test_an_invitation_by_staff_to_a_private_course_never_blocks_the_account_and_enrolls(
    world, new_user_id, published, service_settings, closed_port, path, unreachable
):
    if unreachable:
        service_settings(SERVICE_URL=f"http://127.0.0.1:{closed_port}", TIMEOUT=0.3)
    private = world["courses"]["private"]
    email = f"invited.{uuid.uuid4().hex[:8]}@elsewhere.org"
    invite(email, private)
    if path == "activation":
        user = new_account(new_user_id, email)
        activate_by_email_link(user)
    elif path == "registration-without-activation-email":
        user = new_account(new_user_id, email)
        register_without_activation_email(user)
    else:
        user = new_account(new_user_id, f"before.{email}", is_active=True)
        published.clear()
        change_email_to_invited(user, email)
    assert User.objects.get(pk=user.pk).is_active
    assert CourseEnrollment.is_enrolled(user, private)
    # The invitation opens this course only: another private course still asks the service.
    with pytest.raises(EnrollmentNotAllowed):
        CourseEnrollment.enroll(user, course_key(world["courses"]["private"].replace("PRIVATE", "NEVER")))


@pytest.mark.parametrize("how", ["password-reset", "django-admin"])
def test_an_activation_without_the_signal_is_published_once_after_commit(world, new_user_id, published, how):
    user = new_account(new_user_id, f"reset@{world['rule_domain']}")
    with transaction.atomic():
        # password-reset: PasswordResetConfirmWrapper (legacy view) and LogistrationPasswordResetView (the
        # Authn MFE's API); django-admin: ModelAdmin.save_model. The user as loaded, activated, saved.
        updated = User.objects.get(id=user.id)
        if how.startswith("password"):
            updated.set_password("a new password 123")
        if not updated.is_active:
            updated.is_active = True
            updated.save()
        assert published == []  # not inside the request's transaction
    assert [e["user"].id for e in published] == [user.id]
    assert published[0]["organization"] == world["organization"]


def test_registration_activate_is_one_activation_though_the_save_and_the_signal_both_say_it(new_user_id, published):
    user = new_account(new_user_id, "twice@example.org")
    activate_by_email_link(user)
    assert [e["user"].id for e in published] == [user.id]
    # Saving the active user again (a login's last_login, a profile edit) is no activation.
    with transaction.atomic():
        user.last_login = None
        user.save()
        User.objects.get(pk=user.pk).save()
    assert len(published) == 1


def test_a_rolled_back_activation_sends_nothing(new_user_id, published):
    user = new_account(new_user_id, "rolled.back@example.org")
    with pytest.raises(RuntimeError):
        with transaction.atomic():
            Registration.objects.get(user=user).activate()
            raise RuntimeError("a later step of the request fails")
    assert published == []
    assert not User.objects.get(pk=user.pk).is_active


def test_the_topic_and_switch_are_read_when_an_activation_is_sent(world, new_user_id, published, service_settings):
    """COURSE_ACCESS_GROUPS as Tutor's Python patches leave it, after every plugin_settings() ran."""
    import os

    service_settings(PUBLISH_ACTIVATIONS=False)
    activate_by_email_link(new_account(new_user_id, "off@example.org"))
    assert published == []

    topic = f"operators-{uuid.uuid4().hex[:8]}"
    service_settings(PUBLISH_ACTIVATIONS=True, ACTIVATION_TOPIC=topic)
    user = new_account(new_user_id, "on@example.org")
    activate_by_email_link(user)
    get_producer().prepare_for_shutdown()
    consumer = Consumer({"bootstrap.servers": os.environ["KAFKA_BROKERS"], "group.id": topic, "auto.offset.reset": "earliest"})
    consumer.subscribe([f"{os.environ['CAG_TOPIC_PREFIX']}-{topic}"])
    try:
        deadline, message = time.monotonic() + 30, None
        while message is None and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error():
                message = None
    finally:
        consumer.close()
    assert message is not None, "nothing arrived on the operator's topic"
    headers = dict(message.headers())
    assert headers["ce_type"] == b"org.openedx.learning.user.account.activated.v1"
    assert message.key() is not None and str(user.username).encode() in message.key()


class ReturnsNothing(PipelineStep):
    """An operator's step that ends the pipeline (it returns None, not a dict)."""

    def run_filter(self, **kwargs):  # pylint: disable=arguments-differ
        return None


@pytest.mark.parametrize("operators", [
    "tests.test_lms_paths.ReturnsNothing",
    ["tests.test_lms_paths.ReturnsNothing"],
    {"fail_silently": True, "pipeline": ["tests.test_lms_paths.ReturnsNothing"]},
], ids=["string", "list", "dict"])
def test_an_earlier_step_that_ends_the_pipeline_cannot_open_enrollment(world, outsider, settings, operators):
    lms = type("Settings", (), {"OPEN_EDX_FILTERS_CONFIG": {ENROLLMENT: operators}})
    plugin_settings(lms)
    settings.OPEN_EDX_FILTERS_CONFIG = lms.OPEN_EDX_FILTERS_CONFIG
    with pytest.raises(CourseEnrollmentStarted.PreventEnrollment):
        CourseEnrollmentStarted.run_filter(user=outsider, course_key=course_key(world["courses"]["private"]), mode="audit")


def ccx(key, ccx_id=7):
    return course_key(key.replace("course-v1:", "ccx-v1:") + f"+ccx@{ccx_id}")


def test_a_ccx_course_is_decided_as_its_master_course(world, member, outsider):
    linked = ccx(world["courses"]["linked"])
    assert CourseEnrollmentStarted.run_filter(user=member, course_key=linked, mode="audit")[1] == linked
    with pytest.raises(CourseEnrollmentStarted.PreventEnrollment):
        CourseEnrollmentStarted.run_filter(user=outsider, course_key=ccx(world["courses"]["private"]), mode="audit")


def test_platform_staff_and_course_staff_pass_on_a_private_course(world, new_user_id):
    private = course_key(world["courses"]["private"])
    staff = learner(new_user_id())
    staff.is_staff = True
    superuser = learner(new_user_id())
    superuser.is_superuser = True
    for user in (staff, superuser):
        assert CourseEnrollmentStarted.run_filter(user=user, course_key=private, mode="audit")[0] is user
    course_staff = new_account(new_user_id, "teacher@example.org", is_active=True)
    with pytest.raises(CourseEnrollmentStarted.PreventEnrollment):
        CourseEnrollmentStarted.run_filter(user=course_staff, course_key=private, mode="audit")
    CourseAccessRole.objects.create(user=course_staff, org=private.org, course_id=str(private), role="staff")
    CourseEnrollmentStarted.run_filter(user=course_staff, course_key=private, mode="audit")
    # Their dashboard keeps the private course, the service not asked about it.
    context = {"user": course_staff, "course_enrollments": [enrollment(world["courses"]["private"])]}
    kept, _ = DashboardRenderStarted.run_filter(context=context, template_name="dashboard.html")
    assert [str(e.course_id) for e in kept["course_enrollments"]] == [str(private)]


def test_the_dashboard_drops_the_recent_enrollment_banner_when_it_hides_a_course(world, outsider):
    context = {
        "user": outsider,
        "course_enrollments": [enrollment(world["courses"]["private"]), enrollment(world["courses"]["public"])],
        "enrollment_message": "<div>You have successfully enrolled in Private ...</div>",
    }
    kept, _ = DashboardRenderStarted.run_filter(context=context, template_name="dashboard.html")
    assert [str(e.course_id) for e in kept["course_enrollments"]] == [world["courses"]["public"]]
    assert kept["enrollment_message"] is None


def test_steps_accept_arguments_a_newer_filter_adds(world, member):
    from course_access_groups_openedx.pipeline import EnrollmentAccess

    step = EnrollmentAccess(ENROLLMENT, {})
    out = step.run_filter(user=member, course_key=course_key(world["courses"]["linked"]), mode="audit", enterprise_uuid=None)
    assert out["mode"] == "audit"


def test_the_enrollment_api_view_is_covered_where_openedx_filters_defines_its_filter(world, member, outsider, settings):
    from course_access_groups_openedx import pipeline

    view = "org.openedx.learning.course.enrollment.view.started.v1"
    assert settings.OPEN_EDX_FILTERS_CONFIG[view] == {"fail_silently": False, "pipeline": ["course_access_groups_openedx.pipeline.EnrollmentViewAccess"]}
    try:
        from openedx_filters.learning.filters import CourseEnrollmentViewStarted
    except ImportError:
        # openedx-filters 2 (edx-platform's pin): no such filter, and the plugin runs without it.
        assert pipeline.CourseEnrollmentViewStarted is None
        return
    # EnrollmentListView.post (openedx/core/djangoapps/enrollments/views.py): a reactivation by an API key.
    private = course_key(world["courses"]["private"])
    with pytest.raises(CourseEnrollmentViewStarted.PreventEnrollment):
        CourseEnrollmentViewStarted.run_filter(user=outsider, course_key=private, requester_is_backend_service=True)
    linked = course_key(world["courses"]["linked"])
    assert CourseEnrollmentViewStarted.run_filter(user=member, course_key=linked, requester_is_backend_service=True)[1] == linked
