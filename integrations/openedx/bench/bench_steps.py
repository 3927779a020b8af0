"""
The plugin's pipeline steps in a loop against a running service, through the real
openedx-filters run_filter, one call after another as one LMS worker makes them, and beside them
the bare HTTP call (what the service and the network cost); prints each one's latency
percentiles (milliseconds) as JSON lines. Run by bench/plugin.ts
(`npm run bench:plugin`), which seeds the service and passes:

  CAG_SERVICE_URL, CAG_SERVICE_TOKEN     the service and a token with the role `service`
  stdin: {"user_ids": [...], "course_keys": [...], "iterations": N, "warmup": N, "listing_size": N}
"""

import json
import os
import random
import sys
import time
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

import django  # noqa: E402
from django.conf import settings  # noqa: E402


def configure():
    settings.configure(
        SECRET_KEY="bench-only",
        USE_TZ=True,
        INSTALLED_APPS=["django.contrib.auth", "django.contrib.contenttypes"],
        DATABASES={"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"}},
        COURSE_ACCESS_GROUPS={"SERVICE_URL": os.environ["CAG_SERVICE_URL"], "SERVICE_TOKEN": os.environ["CAG_SERVICE_TOKEN"]},
    )
    django.setup()
    # The filters configuration an LMS gets from the plugin's settings.
    from course_access_groups_openedx.settings import plugin_settings

    plugin_settings(settings)


def percentiles(samples):
    ordered = sorted(samples)
    at = lambda q: ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000  # noqa: E731
    return {"n": len(ordered), "p50": round(at(0.50), 2), "p95": round(at(0.95), 2), "p99": round(at(0.99), 2), "max": round(ordered[-1] * 1000, 2)}


def main():
    request = json.load(sys.stdin)
    configure()
    import crum
    from django.contrib.auth.models import User
    from opaque_keys.edx.keys import CourseKey
    from openedx_filters.learning.filters import CourseAboutRenderStarted, CourseEnrollmentStarted, DashboardRenderStarted

    rng = random.Random(7)
    users = [User(id=i, username=f"u{i}", is_active=True) for i in request["user_ids"]]
    keys = [CourseKey.from_string(k) for k in request["course_keys"]]

    def enroll():
        try:
            CourseEnrollmentStarted.run_filter(user=rng.choice(users), course_key=rng.choice(keys), mode="audit")
        except CourseEnrollmentStarted.PreventEnrollment:
            pass

    def about():
        with crum.impersonate(rng.choice(users)):
            try:
                CourseAboutRenderStarted.run_filter(context={"course": SimpleNamespace(id=rng.choice(keys))}, template_name="about.html")
            except CourseAboutRenderStarted.RenderCustomResponse:
                pass

    def dashboard():
        enrollments = [SimpleNamespace(course_id=k) for k in rng.sample(keys, request["listing_size"])]
        context = {"user": rng.choice(users), "course_enrollments": enrollments, "course_entitlements": []}
        DashboardRenderStarted.run_filter(context=context, template_name="dashboard.html")

    from course_access_groups_openedx.client import get_client

    pool = get_client()._pool

    def bare_get():
        # The same single decision without the filter or the plugin: urllib3 on the same pool.
        user, key = rng.choice(users), rng.choice(keys)
        pool.request("GET", f"/course_access_groups/api/v1/access/?course_id={key}&action=course.enroll&user_id={user.id}")

    # The library logs each refusal with its traceback (openedx_filters.tooling): not what is measured.
    import logging

    logging.disable(logging.CRITICAL)
    steps = {
        "enrollment (CourseEnrollmentStarted)": enroll,
        "about page (CourseAboutRenderStarted)": about,
        f"dashboard of {request['listing_size']} (DashboardRenderStarted, one batch)": dashboard,
        "baseline: the same GET access/ with urllib3 alone": bare_get,
    }
    samples = {name: [] for name in steps}
    # Interleaved, so every step meets the service's cache in the same state.
    for i in range(request["warmup"] + request["iterations"]):
        for name, step in steps.items():
            started = time.perf_counter()
            step()
            if i >= request["warmup"]:
                samples[name].append(time.perf_counter() - started)
    for name in steps:
        print(json.dumps({"step": name, **percentiles(samples[name])}), flush=True)

if __name__ == "__main__":
    main()
