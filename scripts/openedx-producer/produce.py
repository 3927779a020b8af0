"""
Sends Open edX events through the real event bus producer, configured as an Open edX LMS or
Studio configures it: openedx-events signals, EVENT_BUS_PRODUCER_CONFIG, edx-event-bus-kafka's
KafkaEventProducer, Avro through the schema registry. Used by
test/integration/openedx-producer.test.ts; run with the environment scripts/openedx-producer.sh
makes.

Reads one JSON object on stdin:
  {"bootstrap_servers": "...", "schema_registry_url": "...", "topic_prefix": "...",
   "api_key": "...", "api_secret": "...", "ssl_ca_location": "..."      (optional: a secured cluster)
   "events": [{"signal": "registration" | "login" | "catalog", "time": "<ISO 8601, UTC>",
               "user": {"id", "is_active", "username", "email", "name"}            (registration, login)
               "catalog_info": {"course_key", "name", "start", "pacing", "end"?, ...} (catalog)
               "copies": 2 (optional: the same event, same id, sent again)}, ...]}
and writes one JSON line per event sent: {"signal", "id", "time"}.

The library logs and swallows its errors (a delivery failure, a registry refusal): any log record
of level WARNING or above, and any receiver that raised, makes this script exit 1 after it says
what happened, so a test fails instead of waiting for messages that never come.

A secured cluster is reached the way the library offers: EVENT_BUS_KAFKA_API_KEY and
EVENT_BUS_KAFKA_API_SECRET, which its load_common_settings turns into SASL PLAIN over TLS (the
Confluent Cloud convention). It has no setting for a CA file, so for a cluster behind a private CA
this script adds librdkafka's `ssl.ca.location` to what load_common_settings returns, as an LMS
must (or put the CA in the system bundle librdkafka probes): docs/kafka-security.md.
"""

import json
import logging
import sys
import warnings
from datetime import datetime, timezone

import django
from django.conf import settings

# The topics of the service's default KAFKA_TOPICS; the key fields are openedx-events' own.
TOPICS = {
    "registration": ("org.openedx.learning.student.registration.completed.v1", "user-lifecycle", "user.pii.username"),
    "login": ("org.openedx.learning.auth.session.login.completed.v1", "user-lifecycle", "user.pii.username"),
    "catalog": ("org.openedx.content_authoring.course.catalog_info.changed.v1", "course-catalog", "catalog_info.course_key"),
}


class Problems(logging.Handler):
    """Keeps every record of WARNING or above, whoever logged it."""

    def __init__(self):
        super().__init__(level=logging.WARNING)
        self.records = []

    def emit(self, record):
        self.records.append(record)


def configure(request):
    settings.configure(
        INSTALLED_APPS=["openedx_events", "edx_event_bus_kafka"],
        SECRET_KEY="not-used-by-the-producer",
        EVENTS_SERVICE_NAME="lms",
        EVENT_BUS_PRODUCER="edx_event_bus_kafka.create_producer",
        EVENT_BUS_KAFKA_BOOTSTRAP_SERVERS=request["bootstrap_servers"],
        EVENT_BUS_KAFKA_SCHEMA_REGISTRY_URL=request["schema_registry_url"],
        EVENT_BUS_TOPIC_PREFIX=request["topic_prefix"],
        EVENT_BUS_PRODUCER_CONFIG={
            event_type: {topic: {"event_key_field": key_field, "enabled": True}}
            for event_type, topic, key_field in TOPICS.values()
        },
        # Audit lines name the message key (a username): not needed here.
        EVENT_BUS_KAFKA_AUDIT_LOGGING_ENABLED=False,
        USE_TZ=True,
        **(
            {"EVENT_BUS_KAFKA_API_KEY": request["api_key"], "EVENT_BUS_KAFKA_API_SECRET": request["api_secret"]}
            if request.get("api_key")
            else {}
        ),
    )
    django.setup()
    if request.get("ssl_ca_location"):
        from edx_event_bus_kafka.internal import producer

        common = producer.load_common_settings

        def with_ca():
            base = common()
            return None if base is None else {**base, "ssl.ca.location": request["ssl_ca_location"]}

        producer.load_common_settings = with_ca


def event_data(event):
    from opaque_keys.edx.keys import CourseKey
    from openedx_events.content_authoring.data import CourseCatalogData, CourseScheduleData
    from openedx_events.learning.data import UserData, UserPersonalData

    if event["signal"] == "catalog":
        info = dict(event["catalog_info"])
        dates = {k: datetime.fromisoformat(info.pop(k)) for k in ("start", "end", "enrollment_start", "enrollment_end") if info.get(k)}
        schedule = CourseScheduleData(pacing=info.pop("pacing"), **dates)
        return {
            "catalog_info": CourseCatalogData(
                course_key=CourseKey.from_string(info.pop("course_key")), schedule_data=schedule, **info
            )
        }
    user = event["user"]
    pii = UserPersonalData(username=user["username"], email=user["email"], name=user.get("name", ""))
    return {"user": UserData(id=user["id"], is_active=user["is_active"], pii=pii)}


def main():
    request = json.load(sys.stdin)
    problems = Problems()
    logging.basicConfig(level=logging.INFO, stream=sys.stderr)
    logging.getLogger().addHandler(problems)
    logging.captureWarnings(True)
    warnings.simplefilter("default")
    configure(request)

    from openedx_events.event_bus import get_producer
    from openedx_events.tooling import OpenEdxPublicSignal

    failed = []
    for event in request["events"]:
        event_type, topic, key_field = TOPICS[event["signal"]]
        signal = OpenEdxPublicSignal.get_signal_by_type(event_type)
        data = event_data(event)
        time = datetime.fromisoformat(event["time"]).astimezone(timezone.utc)
        copies = event.get("copies", 1)
        if copies == 1:
            # As the platform sends it: the signal, whose receiver (EVENT_BUS_PRODUCER_CONFIG)
            # hands it to the producer with fresh metadata (a new id).
            responses = signal.send_event(time=time, **data)
            failed += [repr(r) for _, r in responses if isinstance(r, Exception)]
            event_id = None
        else:
            # A redelivery: the producer sends the same event (same metadata, same id) again.
            metadata = signal.generate_signal_metadata(time=time)
            for _ in range(copies):
                get_producer().send(signal=signal, topic=topic, event_key_field=key_field, event_data=data, event_metadata=metadata)
            event_id = str(metadata.id)
        print(json.dumps({"signal": event["signal"], "id": event_id, "time": time.isoformat()}), flush=True)

    get_producer().prepare_for_shutdown()
    problems_seen = [f"{r.levelname} {r.name}: {r.getMessage()}" for r in problems.records]
    if failed or problems_seen:
        for line in failed + problems_seen:
            print(f"produce.py: {line}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
