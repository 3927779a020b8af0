"""
``./manage.py lms course_access_groups_sync``: brings to the service the courses and learners the
LMS had before the plugin was installed (or, on Teak, before Studio's catalog signal was on), run
by the Tutor plugin's init task (``tutor local do init``). It sends, through the LMS's event bus
producer, the events the service already consumes:

- per course (edx-platform's CourseOverview), COURSE_CATALOG_INFO_CHANGED with the data Studio sends
  when a course is published (cms/djangoapps/contentstore/signals/handlers.py,
  ``create_catalog_data_for_signal``), on the topic Studio's catalog events go to;
- per active learner whose organization is known (ORGANIZATION_RESOLVER), the plugin's own account
  activation, as publish.py sends it (an inactive learner is sent when they activate).

The service applies events by their time, so a re-run sends the current state again and changes
nothing that has not changed; progress is printed every ``--progress`` items.
"""

from datetime import datetime, timezone

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from django.utils.module_loading import import_string
from opaque_keys.edx.keys import CourseKey
from openedx_events.content_authoring.data import CourseCatalogData, CourseScheduleData
from openedx_events.content_authoring.signals import COURSE_CATALOG_INFO_CHANGED
from openedx_events.event_bus import get_producer

from ...conf import setting
from ...publish import activation_data, send_activation

# Studio's catalog events: their topic (the Tutor plugin's producer configuration) and key.
CATALOG_TOPIC = "course-catalog"
CATALOG_EVENT_KEY_FIELD = "catalog_info.course_key"
# The event requires a start; a course without one starts when edx-platform's courses do by default
# (xmodule/course_metadata_utils.py, DEFAULT_START_DATE).
DEFAULT_START = datetime(2030, 1, 1, tzinfo=timezone.utc)


def catalog_data(overview):
    """A CourseOverview as Studio's CourseCatalogData (hidden: catalog visibility `about` or `none`)."""
    return CourseCatalogData(
        course_key=CourseKey.from_string(str(overview.id)),
        name=overview.display_name or str(overview.id),
        schedule_data=CourseScheduleData(
            start=overview.start or DEFAULT_START,
            pacing="self" if overview.self_paced else "instructor",
            end=overview.end,
            enrollment_start=overview.enrollment_start,
            enrollment_end=overview.enrollment_end,
        ),
        hidden=overview.catalog_visibility in ("about", "none"),
        invitation_only=bool(overview.invitation_only),
    )


class Command(BaseCommand):
    help = "Sends every existing course and active learner to Course Access Groups through the event bus."

    def add_arguments(self, parser):
        parser.add_argument("--progress", type=int, default=500, help="print progress every N items (default 500)")
        parser.add_argument("--catalog-topic", default=CATALOG_TOPIC, help=f"the catalog events' topic (default {CATALOG_TOPIC})")

    def handle(self, *args, **options):
        # edx-platform's module: imported here, since it exists only inside an LMS.
        from openedx.core.djangoapps.content.course_overviews.models import CourseOverview  # pylint: disable=import-outside-toplevel

        every = max(1, options["progress"])
        producer = get_producer()
        if producer is None:
            raise SystemExit("course_access_groups_sync: no event bus producer (EVENT_BUS_PRODUCER) is configured")
        courses = 0
        for overview in CourseOverview.objects.order_by("id").iterator():
            data = {"catalog_info": catalog_data(overview)}
            producer.send(
                signal=COURSE_CATALOG_INFO_CHANGED, topic=options["catalog_topic"], event_key_field=CATALOG_EVENT_KEY_FIELD,
                event_data=data, event_metadata=COURSE_CATALOG_INFO_CHANGED.generate_signal_metadata(),
            )
            courses += 1
            if courses % every == 0:
                self.stdout.write(f"courses: {courses} sent")
        self.stdout.write(f"courses: {courses} sent")

        resolver = import_string(setting("ORGANIZATION_RESOLVER"))
        learners = skipped = 0
        for user in get_user_model().objects.filter(is_active=True).order_by("id").iterator():
            organization = resolver(user)
            if not organization:
                skipped += 1
                continue
            send_activation(activation_data(user, organization))
            learners += 1
            if learners % every == 0:
                self.stdout.write(f"learners: {learners} sent")
        # Delivered before the process ends (the Kafka producer sends in the background).
        producer.prepare_for_shutdown()
        self.stdout.write(f"learners: {learners} sent, {skipped} without an organization skipped")
