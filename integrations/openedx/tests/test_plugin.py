"""
Installing: the package built as Tutor builds it (build isolation, setuptools 69.1.1), installed
into a fresh virtual environment, found by edx-platform's plugin machinery (the real
edx_django_utils.plugins and the `lms.djangoapp` entry point), its settings applied in the LMS's
order of settings phases, and the start-up checks of ready().
"""

import json
import logging
import shutil
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path
from types import SimpleNamespace

import pytest
from django.core.exceptions import ImproperlyConfigured
from openedx_events.tooling import OpenEdxPublicSignal

from course_access_groups_openedx import apps, events
from course_access_groups_openedx.conf import ACTIVATED_EVENT_TYPE
from course_access_groups_openedx.settings import PIPELINE_STEPS, plugin_settings

ROOT = Path(__file__).resolve().parent.parent
ENROLLMENT = "org.openedx.learning.course.enrollment.started.v1"
MINE = PIPELINE_STEPS[ENROLLMENT]
# Tutor v21 builds every package from source with this setuptools (scripts/openedx-plugin.sh keeps its wheel).
BUILD_SETUPTOOLS = "setuptools==69.1.1"
# What each filter looks like once the plugin configured it: its step first, never silent.
CONFIGURED = {t: {"fail_silently": False, "pipeline": [s]} for t, s in PIPELINE_STEPS.items()}


def build_wheel(tmp_path):
    """pip wheel with build isolation, the build backend pinned to Tutor's setuptools, offline."""
    source = tmp_path / "source"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns("tests", "bench", "__pycache__", "*.egg-info", "build"))
    wheels = Path(sys.prefix) / "wheels"
    constraints = tmp_path / "constraints.txt"
    constraints.write_text(BUILD_SETUPTOOLS + "\n")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--disable-pip-version-check", "--no-deps", "--no-index",
         "--find-links", str(wheels), "--wheel-dir", str(tmp_path / "dist"), str(source)],
        check=True, capture_output=True, text=True, env={"PATH": "/usr/bin:/bin", "PIP_CONSTRAINT": str(constraints)},
    )
    return next((tmp_path / "dist").glob("course_access_groups_openedx-*.whl"))


def test_the_package_builds_with_tutors_setuptools_and_installs_as_an_lms_plugin_with_a_working_kafka_producer(tmp_path):
    wheel = build_wheel(tmp_path)
    # A fresh environment of this Python (3.11 in the LMS environment); the LMS's own packages are
    # visible to it through a .pth file, as they are in the LMS's virtualenv.
    venv = tmp_path / "venv"
    subprocess.run([sys._base_executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    target_python = venv / "bin" / "python"
    subprocess.run([sys.executable, "-m", "pip", "--python", str(target_python), "install", "--quiet", "--no-deps",
                    "--no-index", "--disable-pip-version-check", str(wheel)], check=True, capture_output=True, text=True)
    site = subprocess.run([str(target_python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          check=True, capture_output=True, text=True).stdout.strip()
    Path(site, "lms-packages.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    Path(site, "lms_settings.py").write_text("OPEN_EDX_FILTERS_CONFIG = {}\n")
    probe = textwrap.dedent("""
        import json, sys
        from importlib.metadata import distribution, version
        from packaging.requirements import Requirement
        import lms_settings
        from edx_django_utils.plugins import add_plugins, get_plugin_apps
        dist = distribution("course-access-groups-openedx")
        requirements = [Requirement(r) for r in dist.requires or []]
        unmet = [str(r) for r in requirements if not r.specifier.contains(version(r.name), prereleases=True)]
        import confluent_kafka.schema_registry  # what edx-event-bus-kafka's producer needs
        add_plugins("lms_settings", "lms.djangoapp", "common")
        print(json.dumps({
            "requires_python": dist.metadata["Requires-Python"],
            "license": dist.metadata["License"],
            "requires": sorted(r.name for r in requirements),
            "unmet": unmet,
            "apps": get_plugin_apps("lms.djangoapp"),
            "filters": lms_settings.OPEN_EDX_FILTERS_CONFIG,
            "producer_config": getattr(lms_settings, "EVENT_BUS_PRODUCER_CONFIG", None),
        }))
    """)
    out = json.loads(subprocess.run([str(target_python), "-I", "-c", probe], check=True, capture_output=True, text=True,
                                    cwd=tmp_path).stdout)
    assert out["requires_python"] == ">=3.11"
    assert out["license"] == "AGPL-3.0-only"
    assert {"confluent-kafka", "edx-event-bus-kafka", "openedx-events", "openedx-filters"} <= set(out["requires"])
    assert out["unmet"] == []
    assert "course_access_groups_openedx.apps.CourseAccessGroupsOpenedxConfig" in out["apps"]
    assert out["filters"] == CONFIGURED
    assert out["producer_config"] is None  # published at run time: nothing for a later phase to merge into


@pytest.fixture(scope="module")
def registered(tmp_path_factory):
    """The plugin's entry point, as its installed metadata declares it, for this process's add_plugins()."""
    from importlib.metadata import distributions

    if not any(d.metadata["Name"] == "course-access-groups-openedx" for d in distributions()):
        info = tmp_path_factory.mktemp("entry-points") / "course_access_groups_openedx-0.0.dist-info"
        info.mkdir()
        (info / "METADATA").write_text("Metadata-Version: 2.1\nName: course-access-groups-openedx\nVersion: 0.0\n")
        entry_points = (ROOT / "pyproject.toml").read_text().split('[project.entry-points."lms.djangoapp"]')[1].split("[")[0]
        (info / "entry_points.txt").write_text("[lms.djangoapp]\n" + entry_points.strip().replace('"', "") + "\n")
        sys.path.insert(0, str(info.parent))
    yield
    # edx_django_utils caches the plugin apps it found.
    from edx_django_utils.plugins import plugin_apps

    plugin_apps.get_plugin_apps.cache_clear() if hasattr(plugin_apps.get_plugin_apps, "cache_clear") else None


def lms_phases(yaml, tutor_patch=None):
    """
    An LMS's settings as edx-platform builds them, through the real edx_django_utils.plugins:
    lms/envs/common.py (defaults, then add_plugins(__name__, LMS, COMMON)), lms/envs/production.py
    (the YAML file's keys over the module, then add_plugins(..., PRODUCTION)), then Tutor's
    production settings (its Python patches, after everything). A module, as add_plugins wants one.
    """
    import types

    from edx_django_utils.plugins import add_plugins

    module = types.ModuleType("lms_phases_settings")
    sys.modules[module.__name__] = module
    try:
        module.OPEN_EDX_FILTERS_CONFIG = {}
        module.EVENT_BUS_PRODUCER_CONFIG = {"org.openedx.content_authoring.course.catalog_info.changed.v1": {
            "course-catalog-info-changed": {"event_key_field": "catalog_info.course_key", "enabled": False}}}
        add_plugins(module.__name__, apps.LMS, "common")
        for name, value in yaml.items():
            setattr(module, name, value)
        add_plugins(module.__name__, apps.LMS, "production")
        if tutor_patch:
            tutor_patch(module)
        return module
    finally:
        del sys.modules[module.__name__]


def test_settings_phases_leave_the_steps_first_and_never_touch_the_event_bus_producer_config(registered):
    operator_step = "operator.plugin.Step"
    lms = lms_phases({
        "COURSE_ACCESS_GROUPS": {"ACTIVATION_TOPIC": "operators-topic"},
        # The YAML replaces the dict: a string configuration, silent by openedx-filters' default.
        "OPEN_EDX_FILTERS_CONFIG": {ENROLLMENT: operator_step},
    })
    assert lms.OPEN_EDX_FILTERS_CONFIG[ENROLLMENT] == {"fail_silently": False, "pipeline": [MINE, operator_step]}
    assert ACTIVATED_EVENT_TYPE not in lms.EVENT_BUS_PRODUCER_CONFIG

    # CONFIGURE_FILTERS from the YAML takes the steps out again.
    off = lms_phases({"COURSE_ACCESS_GROUPS": {"CONFIGURE_FILTERS": False}})
    assert all(MINE not in c["pipeline"] for c in off.OPEN_EDX_FILTERS_CONFIG.values())


def test_a_tutor_patch_that_replaces_the_filters_after_every_phase_stops_start_up(registered, settings):
    def tutor_patch(module):  # an openedx-lms-production-settings patch of another plugin
        module.OPEN_EDX_FILTERS_CONFIG = {ENROLLMENT: {"fail_silently": True, "pipeline": ["other.plugin.Step"]}}

    lms = lms_phases({}, tutor_patch)
    settings.OPEN_EDX_FILTERS_CONFIG = lms.OPEN_EDX_FILTERS_CONFIG
    with pytest.raises(ImproperlyConfigured, match="OPEN_EDX_FILTERS_CONFIG was changed"):
        apps.check_filters()
    # What the error message offers keeps the other plugin's step, after the plugin's.
    from course_access_groups_openedx.settings import with_steps

    settings.OPEN_EDX_FILTERS_CONFIG = with_steps(lms.OPEN_EDX_FILTERS_CONFIG)
    apps.check_filters()
    assert settings.OPEN_EDX_FILTERS_CONFIG[ENROLLMENT]["pipeline"] == [MINE, "other.plugin.Step"]


def test_configure_filters_off_in_a_tutor_patch_after_every_phase_takes_the_steps_out_at_start_up(registered, settings):
    def tutor_patch(module):  # an operator's openedx-lms-production-settings patch
        module.COURSE_ACCESS_GROUPS = {**module.COURSE_ACCESS_GROUPS, "CONFIGURE_FILTERS": False}

    lms = lms_phases({"OPEN_EDX_FILTERS_CONFIG": {ENROLLMENT: ["other.plugin.Step"]}, "COURSE_ACCESS_GROUPS": {}}, tutor_patch)
    assert lms.OPEN_EDX_FILTERS_CONFIG[ENROLLMENT]["pipeline"][0] == MINE  # the phases ran before the patch
    settings.OPEN_EDX_FILTERS_CONFIG = lms.OPEN_EDX_FILTERS_CONFIG
    settings.COURSE_ACCESS_GROUPS = lms.COURSE_ACCESS_GROUPS
    apps.check_filters()
    assert all(MINE not in c["pipeline"] for c in settings.OPEN_EDX_FILTERS_CONFIG.values())
    assert settings.OPEN_EDX_FILTERS_CONFIG[ENROLLMENT]["pipeline"] == ["other.plugin.Step"]


def test_edx_platforms_test_settings_turn_enforcement_and_publishing_off(registered, settings):
    # lms/envs/test.py: `from .common import *` (whose add_plugins(COMMON) added the steps), then
    # add_plugins(__name__, LMS, TEST).
    import types

    from edx_django_utils.plugins import add_plugins

    module = types.ModuleType("lms_test_settings")
    module.OPEN_EDX_FILTERS_CONFIG = {}
    sys.modules[module.__name__] = module
    try:
        add_plugins(module.__name__, apps.LMS, "common")
        assert module.OPEN_EDX_FILTERS_CONFIG == CONFIGURED
        add_plugins(module.__name__, apps.LMS, "test")
    finally:
        del sys.modules[module.__name__]
    assert all(config["pipeline"] == [] for config in module.OPEN_EDX_FILTERS_CONFIG.values())
    assert module.COURSE_ACCESS_GROUPS == {"CONFIGURE_FILTERS": False, "PUBLISH_ACTIVATIONS": False}
    # ready()'s checks pass on those settings.
    settings.OPEN_EDX_FILTERS_CONFIG = module.OPEN_EDX_FILTERS_CONFIG
    settings.COURSE_ACCESS_GROUPS = module.COURSE_ACCESS_GROUPS
    apps.check_filters()


def test_plugin_settings_put_the_step_first_not_silent_and_apply_once():
    lms = SimpleNamespace(OPEN_EDX_FILTERS_CONFIG={ENROLLMENT: {"fail_silently": True, "pipeline": ["other.Step", MINE], "log_level": "debug"}})
    plugin_settings(lms)
    plugin_settings(lms)  # common, then production: still once
    assert lms.OPEN_EDX_FILTERS_CONFIG[ENROLLMENT] == {"fail_silently": False, "pipeline": [MINE, "other.Step"], "log_level": "debug"}
    listed = SimpleNamespace(OPEN_EDX_FILTERS_CONFIG={ENROLLMENT: ["a.Step", "b.Step"]})
    plugin_settings(listed)
    assert listed.OPEN_EDX_FILTERS_CONFIG[ENROLLMENT] == {"fail_silently": False, "pipeline": [MINE, "a.Step", "b.Step"]}


@pytest.mark.parametrize("replaced", [
    {},  # a Tutor patch that assigns a new dict
    {ENROLLMENT: {"fail_silently": False, "pipeline": ["operator.Step", MINE]}},  # the step no longer first
    {ENROLLMENT: {"fail_silently": True, "pipeline": [MINE]}},  # silent again
])
def test_ready_refuses_to_start_when_later_settings_undid_the_steps(settings, replaced):
    settings.OPEN_EDX_FILTERS_CONFIG = {**CONFIGURED, **replaced} if replaced else {}
    with pytest.raises(ImproperlyConfigured, match="OPEN_EDX_FILTERS_CONFIG was changed"):
        apps.check_filters()
    settings.COURSE_ACCESS_GROUPS = {**settings.COURSE_ACCESS_GROUPS, "CONFIGURE_FILTERS": False}
    apps.check_filters()  # an operator who turned enforcement off is not stopped


def test_ready_refuses_to_start_when_another_package_owns_the_activation_event_type(monkeypatch):
    apps.check_event_type()
    other = object.__new__(OpenEdxPublicSignal)
    monkeypatch.setitem(OpenEdxPublicSignal._mapping, ACTIVATED_EVENT_TYPE, other)
    with pytest.raises(ImproperlyConfigured, match="another package"):
        apps.check_event_type()
    assert events.USER_ACCOUNT_ACTIVATED_EVENT is not other


def test_ready_says_when_activations_cannot_reach_kafka(settings, caplog):
    caplog.set_level(logging.ERROR, logger="course_access_groups_openedx")
    apps.check_event_bus()
    assert caplog.records == []
    # What Tutor's common settings set after the YAML is loaded.
    settings.EVENT_BUS_PRODUCER = "edx_event_bus_redis.create_producer"
    apps.check_event_bus()
    assert "not edx_event_bus_kafka.create_producer" in caplog.text


def test_an_activation_signal_that_cannot_be_imported_stops_start_up(service_settings):
    service_settings(ACTIVATION_SIGNAL="openedx.core.djangoapps.signals.signals.NO_SUCH_SIGNAL")
    with pytest.raises(ImproperlyConfigured, match="NO_SUCH_SIGNAL"):
        apps.connect_activation_receiver()


def test_ready_warns_when_an_mfe_replaces_a_page_the_plugin_filters(settings, caplog):
    caplog.set_level(logging.WARNING, logger="course_access_groups_openedx")
    apps.check_mfes()
    assert caplog.records == []
    # What tutor-mfe sets (lms/envs/common.py defines both toggles).
    settings.LEARNER_HOME_MICROFRONTEND_URL = "http://apps.local.openedx.io/learner-dashboard/"
    settings.FEATURES = {"ENABLE_CATALOG_MICROFRONTEND": True}
    apps.check_mfes()
    assert "DashboardRenderStarted never runs" in caplog.text
    assert "before CourseAboutRenderStarted runs" in caplog.text
