"""
The administrators of each organization, for the LMS's JWTs: a function for edx-platform's
``SYSTEM_WIDE_ROLE_CLASSES`` (edx-rbac ``create_role_auth_claim_for_user`` calls it with the user
and emits each ``(role, context)`` pair as ``role:context`` in the token's ``roles``). The service
maps ``course_access_groups_admin:<org>`` to an administrator of ``<org>`` and ignores every other
role (docs/api.md).

The one source of truth is the LMS's own org-level course access role: a ``CourseAccessRole`` row
with an ``org``, no course, and the role ``COURSE_ACCESS_GROUPS['ADMIN_ROLE']``
(``course_access_groups_admin`` by default), the shape of edx-platform's ``student/roles.py``
``OrgRole`` (``OrgStaffRole``, ``OrgInstructorRole``): granted in the Django admin
(``/admin/student/courseaccessrole/``) or by ``OrgRole(role, org).add_users(user)``.
"""

from .conf import setting

ROLE_FUNCTION = "course_access_groups_openedx.roles.course_access_groups_admin_roles"
JWT_ROLE = "course_access_groups_admin"


def course_access_groups_admin_roles(user):
    """``[("course_access_groups_admin", org), ...]`` for the organizations ``user`` administers."""
    if not getattr(user, "is_authenticated", False) or getattr(user, "pk", None) is None:
        return []
    # Inside the LMS only (edx-rbac calls this there); imported late, as the pipeline's models are.
    from common.djangoapps.student.models import CourseAccessRole  # pylint: disable=import-outside-toplevel
    from opaque_keys.edx.django.models import CourseKeyField  # pylint: disable=import-outside-toplevel

    orgs = (
        CourseAccessRole.objects.filter(user=user, role=setting("ADMIN_ROLE"), course_id=CourseKeyField.Empty)
        .exclude(org="")
        .values_list("org", flat=True)
    )
    return [(JWT_ROLE, org) for org in sorted(set(orgs))]
