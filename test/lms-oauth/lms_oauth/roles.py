"""
The roles this stand-in puts in its JWTs, hard-coded by username. In a real LMS the claim comes
from edx-rbac's ``create_role_auth_claim_for_user`` over ``SYSTEM_WIDE_ROLE_CLASSES``, where the
LMS plugin adds ``course_access_groups_admin_roles`` (integrations/openedx/src/.../roles.py,
tested over an LMS-shaped database by the plugin's own tests); here only its output matters.
"""

ROLES = {
    "ada": ["course_access_groups_admin:org-a"],
    "bo": ["course_access_groups_admin:org-a", "course_access_groups_admin:org-b"],
    # A role of another application: the service ignores it, so nora administers nothing here.
    "nora": ["enterprise_openedx_admin:42"],
}


def roles_of(user):
    return list(ROLES.get(user.username, []))
