"""
The plugin's settings: one Django setting, ``COURSE_ACCESS_GROUPS``, a dict whose keys override
``DEFAULTS`` (README.md lists them).
"""

from django.conf import settings

ENROLL = "course.enroll"
SEE_ABOUT_PAGE = "course.see_about_page"
SEE_IN_CATALOG = "course.see_in_catalog"

ACTIVATED_EVENT_TYPE = "org.openedx.learning.user.account.activated.v1"

DEFAULTS = {
    # The service's root URL, e.g. "https://cag.example.org" (the API prefix is added): https, or
    # http only to a name inside the deployment (client.py: a single-label name, *.svc,
    # *.svc.cluster.local, localhost).
    "SERVICE_URL": "",
    # The service's root as browsers reach it (its PUBLIC_URL), e.g.
    # "https://course-access-groups.lms.example.org": the LMS's /course_access_groups/ page links
    # its administrators to the console's sign-in there (console.py). Empty: no such page (404).
    "PUBLIC_URL": "",
    # Empty (the default): every call carries a short-lived JWT the LMS signs with its own key for
    # SERVICE_USERNAME (service_token.py). Set, a JWT with the role `service` signed with the
    # service's key, sent as the bearer token instead (development); never logged.
    "SERVICE_TOKEN": "",
    # The LMS user whose signed tokens the calls carry, with the role course_access_groups_service
    # (the service's `service` role): any active user, never staff.
    "SERVICE_USERNAME": "course_access_groups_service",
    # Seconds a signed token is valid, and how long before its end a new one is signed.
    "TOKEN_LIFETIME": 300,
    "TOKEN_RENEW_BEFORE": 60,
    # The org-level CourseAccessRole.role that makes its user an administrator of that organization
    # in the service (roles.py).
    "ADMIN_ROLE": "course_access_groups_admin",
    # Seconds for one call, connecting and reading together.
    "TIMEOUT": 0.5,
    # Connections kept to the service per LMS process (one pool).
    "POOL_SIZE": 10,
    # What a hook does when the service cannot answer (unreachable, timeout, error status):
    # "deny" or "allow", per action.
    "ON_UNAVAILABLE": {ENROLL: "deny", SEE_ABOUT_PAGE: "deny", SEE_IN_CATALOG: "allow"},
    # Where a hidden about page sends the learner; empty: the LMS's 404 page.
    "HIDDEN_ABOUT_PAGE_REDIRECT": "",
    # The plugin's pipeline steps first in OPEN_EDX_FILTERS_CONFIG (settings.py; checked in ready()).
    "CONFIGURE_FILTERS": True,
    # The organization of every learner (a single-site LMS), for the default resolver.
    "ORGANIZATION": "",
    # A function user -> organization (or None: the activation is not published).
    "ORGANIZATION_RESOLVER": "course_access_groups_openedx.organization.configured_organization",
    # The Django signal edx-platform sends when a learner activates their account.
    "ACTIVATION_SIGNAL": "openedx.core.djangoapps.signals.signals.USER_ACCOUNT_ACTIVATED",
    # Publishes activations on the event bus, on this topic (read when each one is sent).
    "PUBLISH_ACTIVATIONS": True,
    "ACTIVATION_TOPIC": "user-account-activated",
}


def setting(name):
    """One value of COURSE_ACCESS_GROUPS, else its default."""
    configured = getattr(settings, "COURSE_ACCESS_GROUPS", None) or {}
    if name == "ON_UNAVAILABLE":
        return {**DEFAULTS[name], **configured.get(name, {})}
    return configured.get(name, DEFAULTS[name])
