"""
Plugin settings for edx-platform's own ``test`` settings (lms/envs/test.py): they start from
lms/envs/common.py, whose phase already added the steps, so this phase takes them out again and
turns publishing off. edx-platform's suite enrolls learners in courses no service knows: with the
steps on, every one of those enrollments would be refused.
"""

from .settings import without_steps


def plugin_settings(settings):
    """Called by edx-platform (add_plugins with the TEST settings type)."""
    settings.OPEN_EDX_FILTERS_CONFIG = without_steps(getattr(settings, "OPEN_EDX_FILTERS_CONFIG", None))
    configured = getattr(settings, "COURSE_ACCESS_GROUPS", None) or {}
    settings.COURSE_ACCESS_GROUPS = {**configured, "CONFIGURE_FILTERS": False, "PUBLISH_ACTIVATIONS": False}
