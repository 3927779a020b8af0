"""
Installing: the package built and installed as an operator installs it, found by edx-platform's
plugin machinery (edx_django_utils.plugins, the `lms.djangoapp` entry point), and its settings
applied to a settings module as edx-platform applies them.
"""

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from types import SimpleNamespace

import pytest
from django.core.exceptions import ImproperlyConfigured

from course_access_groups_openedx.apps import connect_activation_receiver
from course_access_groups_openedx.settings import PIPELINE_STEPS, plugin_settings

ROOT = Path(__file__).resolve().parent.parent


def test_the_built_package_is_an_lms_plugin_that_configures_filters_and_the_event_bus(tmp_path):
    # Built from a copy, so no build/ or *.egg-info lands in the source tree.
    source = tmp_path / "source"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns("tests", "bench", "__pycache__", "*.egg-info", "build"))
    target = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-deps",
         "--no-build-isolation", "--no-index", "--target", str(target), str(source)],
        check=True, capture_output=True, text=True,
    )
    (target / "lms_settings.py").write_text("OPEN_EDX_FILTERS_CONFIG = {}\nCOURSE_ACCESS_GROUPS = {'ACTIVATION_TOPIC': 'activations'}\n")
    probe = textwrap.dedent("""
        import json
        import lms_settings
        from edx_django_utils.plugins import add_plugins, get_plugin_apps
        print(json.dumps(get_plugin_apps("lms.djangoapp")))
        add_plugins("lms_settings", "lms.djangoapp", "production")
        print(json.dumps({"filters": lms_settings.OPEN_EDX_FILTERS_CONFIG, "producer": lms_settings.EVENT_BUS_PRODUCER_CONFIG}))
    """)
    # A fresh interpreter that sees only the installed copy (not src/) and no Django settings.
    out = subprocess.run([sys.executable, "-I", "-c", f"import sys; sys.path.insert(0, {str(target)!r})\n{probe}"],
                         check=True, capture_output=True, text=True).stdout.splitlines()
    # Other installed packages register LMS plugins too (edx-toggles does).
    assert "course_access_groups_openedx.apps.CourseAccessGroupsOpenedxConfig" in json.loads(out[0])
    assert out[1] == (
        '{"filters": {'
        '"org.openedx.learning.course.enrollment.started.v1": {"fail_silently": false, "pipeline": ["course_access_groups_openedx.pipeline.EnrollmentAccess"]}, '
        '"org.openedx.learning.course_about.render.started.v1": {"fail_silently": false, "pipeline": ["course_access_groups_openedx.pipeline.AboutPageAccess"]}, '
        '"org.openedx.learning.dashboard.render.started.v1": {"fail_silently": false, "pipeline": ["course_access_groups_openedx.pipeline.DashboardListing"]}}, '
        '"producer": {"org.openedx.learning.user.account.activated.v1": {"activations": {"event_key_field": "user.pii.username", "enabled": true}}}}'
    )


def test_plugin_settings_keep_what_the_operator_configured_and_apply_once():
    enrollment = "org.openedx.learning.course.enrollment.started.v1"
    mine = PIPELINE_STEPS[enrollment]
    lms = SimpleNamespace(
        OPEN_EDX_FILTERS_CONFIG={enrollment: {"fail_silently": True, "pipeline": ["other.Step"], "log_level": "debug"}},
        EVENT_BUS_PRODUCER_CONFIG={"org.openedx.learning.user.account.activated.v1": {"mine": {"event_key_field": "user.id", "enabled": True}}},
    )
    plugin_settings(lms)
    plugin_settings(lms)  # common, then production: still once
    assert lms.OPEN_EDX_FILTERS_CONFIG[enrollment] == {"fail_silently": True, "pipeline": ["other.Step", mine], "log_level": "debug"}
    assert lms.EVENT_BUS_PRODUCER_CONFIG == {"org.openedx.learning.user.account.activated.v1": {"mine": {"event_key_field": "user.id", "enabled": True}}}

    hands_off = SimpleNamespace(COURSE_ACCESS_GROUPS={"CONFIGURE_FILTERS": False, "PUBLISH_ACTIVATIONS": False})
    plugin_settings(hands_off)
    assert not hasattr(hands_off, "OPEN_EDX_FILTERS_CONFIG") and not hasattr(hands_off, "EVENT_BUS_PRODUCER_CONFIG")


def test_an_activation_signal_that_cannot_be_imported_stops_start_up(service_settings):
    service_settings(ACTIVATION_SIGNAL="openedx.core.djangoapps.signals.signals.NO_SUCH_SIGNAL")
    with pytest.raises(ImproperlyConfigured, match="NO_SUCH_SIGNAL"):
        connect_activation_receiver()
