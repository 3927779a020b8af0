"""
Plugin settings, applied by edx-platform to its settings modules (common, production, devstack,
test): the plugin's pipeline steps join OPEN_EDX_FILTERS_CONFIG and the activation event joins
EVENT_BUS_PRODUCER_CONFIG, so installing the package is all an operator must do beyond setting
COURSE_ACCESS_GROUPS. Applied to every settings type because a later one (production's YAML)
may replace either dict; each addition is idempotent and keeps what an operator configured.
"""

from .conf import ACTIVATED_EVENT_TYPE, DEFAULTS

PIPELINE_STEPS = {
    "org.openedx.learning.course.enrollment.started.v1": "course_access_groups_openedx.pipeline.EnrollmentAccess",
    "org.openedx.learning.course_about.render.started.v1": "course_access_groups_openedx.pipeline.AboutPageAccess",
    "org.openedx.learning.dashboard.render.started.v1": "course_access_groups_openedx.pipeline.DashboardListing",
}


def _add_filters(settings):
    filters = dict(getattr(settings, "OPEN_EDX_FILTERS_CONFIG", None) or {})
    for filter_type, step in PIPELINE_STEPS.items():
        existing = filters.get(filter_type)
        if not existing:
            # A step that breaks (a bug, not the service being down: the steps handle that) stops
            # the request rather than being skipped, which would allow everything.
            filters[filter_type] = {"fail_silently": False, "pipeline": [step]}
            continue
        if isinstance(existing, str):
            existing = {"pipeline": [existing]}
        elif isinstance(existing, list):
            existing = {"pipeline": existing}
        pipeline = list(existing.get("pipeline", []))
        if step not in pipeline:
            pipeline.append(step)
        # The operator's other keys (fail_silently, extra configuration) stay as they are.
        filters[filter_type] = {**existing, "pipeline": pipeline}
    settings.OPEN_EDX_FILTERS_CONFIG = filters


def _add_producer_config(settings, topic):
    producer = dict(getattr(settings, "EVENT_BUS_PRODUCER_CONFIG", None) or {})
    # Keyed by username, as the platform's own user events are: one learner's events stay in one
    # partition when an operator sends them to one topic. An operator's entry is kept.
    producer.setdefault(ACTIVATED_EVENT_TYPE, {topic: {"event_key_field": "user.pii.username", "enabled": True}})
    settings.EVENT_BUS_PRODUCER_CONFIG = producer


def plugin_settings(settings):
    """Called by edx-platform (edx_django_utils.plugins.add_plugins) with a settings module."""
    configured = getattr(settings, "COURSE_ACCESS_GROUPS", None) or {}
    if configured.get("CONFIGURE_FILTERS", DEFAULTS["CONFIGURE_FILTERS"]):
        _add_filters(settings)
    if configured.get("PUBLISH_ACTIVATIONS", DEFAULTS["PUBLISH_ACTIVATIONS"]):
        _add_producer_config(settings, configured.get("ACTIVATION_TOPIC", DEFAULTS["ACTIVATION_TOPIC"]))
