"""
Plugin settings, applied by edx-platform to its settings modules (common, production, devstack;
not test, so edx-platform's own test settings stay unenforced): the plugin's pipeline steps go
FIRST in OPEN_EDX_FILTERS_CONFIG, with ``fail_silently: False``. First, because openedx-filters
stops a pipeline at a step that returns anything but a dict, so a step after it would never run
and enforcement would fail open; not silent, because a broken step must stop the request rather
than be skipped. Applied in every phase because a later one (production's YAML) may replace the
dict; each application is idempotent. The activation event needs no settings here: it is
published at run time (publish.py). apps.py checks in ready() that the result survived every
later change (Tutor's Python patches, other plugins).
"""

from .conf import DEFAULTS
from .roles import ROLE_FUNCTION

PIPELINE_STEPS = {
    "org.openedx.learning.course.enrollment.started.v1": "course_access_groups_openedx.pipeline.EnrollmentAccess",
    # Run by LMS releases whose openedx-filters define CourseEnrollmentViewStarted; configured on
    # every release (an LMS that never runs a filter never reads its configuration).
    "org.openedx.learning.course.enrollment.view.started.v1": "course_access_groups_openedx.pipeline.EnrollmentViewAccess",
    "org.openedx.learning.course_about.render.started.v1": "course_access_groups_openedx.pipeline.AboutPageAccess",
    "org.openedx.learning.dashboard.render.started.v1": "course_access_groups_openedx.pipeline.DashboardListing",
}


def _as_config(existing):
    """A filter's configuration in its dict form (openedx-filters also accepts a string or a list)."""
    if isinstance(existing, str):
        return {"pipeline": [existing]}
    if isinstance(existing, (list, tuple)):
        return {"pipeline": list(existing)}
    return dict(existing or {})


def with_steps(filters):
    """OPEN_EDX_FILTERS_CONFIG with the plugin's steps first and each of their filters not silent."""
    filters = dict(filters or {})
    for filter_type, step in PIPELINE_STEPS.items():
        config = _as_config(filters.get(filter_type))
        others = [s for s in config.get("pipeline", []) if s != step]
        filters[filter_type] = {**config, "fail_silently": False, "pipeline": [step, *others]}
    return filters


def without_steps(filters):
    """OPEN_EDX_FILTERS_CONFIG with the plugin's steps taken out (CONFIGURE_FILTERS: False)."""
    filters = dict(filters or {})
    for filter_type, step in PIPELINE_STEPS.items():
        if filter_type in filters:
            config = _as_config(filters[filter_type])
            filters[filter_type] = {**config, "pipeline": [s for s in config.get("pipeline", []) if s != step]}
    return filters


def with_role_function(role_classes):
    """SYSTEM_WIDE_ROLE_CLASSES with the plugin's role function (roles.py) once, after the others."""
    role_classes = list(role_classes or [])
    return role_classes if ROLE_FUNCTION in role_classes else [*role_classes, ROLE_FUNCTION]


def plugin_settings(settings):
    """Called by edx-platform (edx_django_utils.plugins.add_plugins) with a settings module."""
    # The LMS's JWTs carry course_access_groups_admin:<org> (roles.py), as edx-rbac emits them.
    settings.SYSTEM_WIDE_ROLE_CLASSES = with_role_function(getattr(settings, "SYSTEM_WIDE_ROLE_CLASSES", None))
    configured = getattr(settings, "COURSE_ACCESS_GROUPS", None) or {}
    filters = getattr(settings, "OPEN_EDX_FILTERS_CONFIG", None)
    if configured.get("CONFIGURE_FILTERS", DEFAULTS["CONFIGURE_FILTERS"]):
        settings.OPEN_EDX_FILTERS_CONFIG = with_steps(filters)
    elif filters:
        settings.OPEN_EDX_FILTERS_CONFIG = without_steps(filters)
