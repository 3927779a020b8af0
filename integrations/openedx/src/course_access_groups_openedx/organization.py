"""
Organization resolvers: ``COURSE_ACCESS_GROUPS['ORGANIZATION_RESOLVER']`` names a function
``user -> str | None`` giving the organization (the service's ``org``) of a learner who has just
activated. None means "not known": the activation is not published (and a warning says so).
"""

import logging

from .conf import setting

log = logging.getLogger(__name__)


def configured_organization(user):  # pylint: disable=unused-argument
    """A single-site LMS: every learner belongs to COURSE_ACCESS_GROUPS['ORGANIZATION']."""
    return setting("ORGANIZATION") or None


def _organizations(value):
    return [value] if isinstance(value, str) and value else [v for v in (value or []) if isinstance(v, str) and v]


def _created_on_site_filter(user):
    """The course_org_filter of the site the account was created on, or None when that is not known."""
    # edx-platform's modules: imported when called, since they exist only inside an LMS.
    # pylint: disable=import-outside-toplevel
    from common.djangoapps.student.models import UserAttribute
    from openedx.core.djangoapps.site_configuration.models import SiteConfiguration

    # Set at registration (user_authn's create_account): the domain of the request's site.
    domain = UserAttribute.get_user_attribute(user, "created_on_site")
    if not domain:
        return None
    configuration = SiteConfiguration.objects.filter(site__domain=domain, enabled=True).first()
    return configuration.get_value("course_org_filter") if configuration else None


def site_organization(user):
    """
    A multi-site LMS (one organization per site): the ``course_org_filter`` of the site the account
    was created on (edx-platform's UserAttribute ``created_on_site``), else of the current site's
    configuration. A site naming several organizations is not guessed from: a warning, and the
    activation is not published. No site naming one: COURSE_ACCESS_GROUPS['ORGANIZATION'].
    """
    from openedx.core.djangoapps.site_configuration import helpers  # pylint: disable=import-outside-toplevel

    value = _created_on_site_filter(user)
    if value is None:
        value = helpers.get_value("course_org_filter")
    organizations = _organizations(value)
    if len(organizations) > 1:
        log.warning(
            "Course Access Groups: the site of user %s names %d organizations in course_org_filter; "
            "which one the learner belongs to is not guessed",
            user.id, len(organizations),
        )
        return None
    return organizations[0] if organizations else configured_organization(user)


# The resolver's earlier name, kept for configurations that name it.
site_course_org_filter = site_organization
