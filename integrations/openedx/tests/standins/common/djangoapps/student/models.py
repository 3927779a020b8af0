"""
Test fixture only (tests/standins/README.md): the parts of edx-platform's student models the
plugin reads or that run around it, reproduced from common/djangoapps/student/models/user.py and
models/course_enrollment.py (master): CourseEnrollmentAllowed (``for_user``), UserAttribute,
CourseAccessRole,
Registration (``activate``), CourseEnrollment (``enroll`` runs the CourseEnrollmentStarted filter
and turns PreventEnrollment into EnrollmentNotAllowed, with no try/except around it), and the
User ``pre_save``/``post_save`` receivers ``user_pre_save_callback`` / ``user_post_save_callback``
that auto-enroll an activated user in the courses staff invited their email to.
"""

import uuid

from django.contrib.auth.models import User
from django.db import models
from django.db.models.signals import post_save, pre_save
from django.dispatch import receiver
from django.utils import timezone
from opaque_keys.edx.django.models import CourseKeyField
from opaque_keys.edx.keys import CourseKey
from openedx.core.djangoapps.signals.signals import USER_ACCOUNT_ACTIVATED
from openedx_filters.learning.filters import CourseEnrollmentStarted


class EnrollmentNotAllowed(Exception):
    """common/djangoapps/student/models/course_enrollment.py"""


class CourseEnrollmentAllowed(models.Model):
    """An email staff invited to a course before (or after) its account existed."""

    email = models.CharField(max_length=255, db_index=True)
    course_id = models.CharField(max_length=255, db_index=True)
    auto_enroll = models.BooleanField(default=0)
    user = models.ForeignKey(User, null=True, blank=True, on_delete=models.CASCADE)

    @classmethod
    def for_user(cls, user):
        # edx-platform: the invitations of the user's email (or linked to the user).
        return cls.objects.filter(models.Q(email=user.email) | models.Q(user=user))


class UserAttribute(models.Model):
    """Named values of a user; registration stores ``created_on_site`` (the site's domain)."""

    user = models.ForeignKey(User, related_name="attributes", on_delete=models.CASCADE)
    name = models.CharField(max_length=255, db_index=True)
    value = models.CharField(max_length=255)

    @classmethod
    def set_user_attribute(cls, user, name, value):
        cls.objects.update_or_create(user=user, name=name, defaults={"value": value})

    @classmethod
    def get_user_attribute(cls, user, name):
        try:
            return cls.objects.get(user=user, name=name).value
        except cls.DoesNotExist:
            return None


class CourseAccessRole(models.Model):
    """
    A role of a user in a course or an organization (role: staff, instructor, ccx_coach, ...), as
    common/djangoapps/student/models/user.py defines it: ``course_id`` a CourseKeyField that is
    ``CourseKeyField.Empty`` ('' in the row) for an org-level role (student/roles.py ``OrgRole``).
    """

    user = models.ForeignKey(User, on_delete=models.CASCADE)
    org = models.CharField(max_length=64, db_index=True, blank=True)
    course_id = CourseKeyField(max_length=255, db_index=True, blank=True)
    role = models.CharField(max_length=64, db_index=True)


class CourseEnrollment(models.Model):
    user = models.ForeignKey(User, on_delete=models.CASCADE)
    course_id = models.CharField(max_length=255)
    mode = models.CharField(max_length=100, default="audit")
    is_active = models.BooleanField(default=True)

    @classmethod
    def is_enrolled(cls, user, course_key):
        return cls.objects.filter(user=user, course_id=str(course_key), is_active=True).exists()

    @classmethod
    def enroll(cls, user, course_key, mode="audit", check_access=False, can_upgrade=False, enterprise_uuid=None):
        # As edx-platform's CourseEnrollment.enroll: the filter first, its refusal re-raised.
        try:
            user, course_key, mode = CourseEnrollmentStarted.run_filter(user=user, course_key=course_key, mode=mode)
        except CourseEnrollmentStarted.PreventEnrollment as exc:
            raise EnrollmentNotAllowed(str(exc)) from exc
        enrollment, _ = cls.objects.update_or_create(user=user, course_id=str(course_key), defaults={"mode": mode, "is_active": True})
        return enrollment


class Registration(models.Model):
    user = models.OneToOneField(User, on_delete=models.CASCADE)
    activation_key = models.CharField(max_length=32, unique=True, db_index=True)
    activation_timestamp = models.DateTimeField(default=None, null=True, blank=True)

    def register(self, user):
        self.activation_key = uuid.uuid4().hex
        self.user = user
        self.save()

    def activate(self):
        self.user.is_active = True
        self.user.save(update_fields=["is_active"])
        self.activation_timestamp = timezone.now()
        self.save()
        USER_ACCOUNT_ACTIVATED.send_robust(self.__class__, user=self.user)


def _changed_fields(user):
    # common/djangoapps/util/model_utils.py get_changed_fields_dict: the fields whose value differs
    # from the stored row (all of them for a new user).
    if user.pk is None:
        return {"is_active": None, "email": None}
    try:
        old = User.objects.get(pk=user.pk)
    except User.DoesNotExist:
        return {"is_active": None, "email": None}
    return {f: getattr(old, f) for f in ("is_active", "email") if getattr(old, f) != getattr(user, f)}


@receiver(pre_save, sender=User)
def user_pre_save_callback(sender, **kwargs):
    kwargs["instance"]._changed_fields = _changed_fields(kwargs["instance"])


@receiver(post_save, sender=User)
def user_post_save_callback(sender, **kwargs):
    # Reproduced from edx-platform: no try/except around CourseEnrollment.enroll.
    user = kwargs["instance"]
    changed_fields = user._changed_fields
    if "is_active" in changed_fields or "email" in changed_fields:
        if user.is_active:
            for cea in CourseEnrollmentAllowed.for_user(user).filter(auto_enroll=True):
                if CourseEnrollment.is_enrolled(user, cea.course_id):
                    continue
                CourseEnrollment.enroll(user, CourseKey.from_string(cea.course_id))
