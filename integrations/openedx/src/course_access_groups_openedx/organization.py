"""
Organization resolvers: ``COURSE_ACCESS_GROUPS['ORGANIZATION_RESOLVER']`` names a function
``user -> str | None`` giving the organization (the service's ``org``) of a learner who has just
activated. None means "not known": the activation is not published (and a warning says so).
"""

from .conf import setting


def configured_organization(user):  # pylint: disable=unused-argument
    """A single-site LMS: every learner belongs to COURSE_ACCESS_GROUPS['ORGANIZATION']."""
    return setting("ORGANIZATION") or None


def site_course_org_filter(user):
    """
    A multi-site LMS (one organization per site): the ``course_org_filter`` of the current site's
    configuration (the site the learner activated on), when it names exactly one organization;
    else COURSE_ACCESS_GROUPS['ORGANIZATION'].
    """
    # edx-platform's module: imported when called, since it exists only inside an LMS.
    from openedx.core.djangoapps.site_configuration import helpers  # pylint: disable=import-outside-toplevel

    value = helpers.get_value("course_org_filter")
    if isinstance(value, (list, tuple)) and len(value) == 1:
        value = value[0]
    if isinstance(value, str) and value:
        return value
    return configured_organization(user)
