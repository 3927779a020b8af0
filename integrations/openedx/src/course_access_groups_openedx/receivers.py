"""
Publishing: edx-platform's USER_ACCOUNT_ACTIVATED Django signal becomes the service's
activation event on the Open edX event bus. Nothing here may break the LMS request that
activated the learner: every failure is logged (user id only) and swallowed, as the platform's
own producer does with its delivery errors.
"""

import logging

from django.utils.module_loading import import_string
from openedx_events.learning.data import UserData, UserPersonalData

from .conf import setting
from .events import USER_ACCOUNT_ACTIVATED_EVENT

log = logging.getLogger(__name__)


def _full_name(user):
    # edx-platform keeps the display name on the UserProfile; Django's own User has first/last names.
    profile_name = getattr(getattr(user, "profile", None), "name", None)
    return profile_name or user.get_full_name()


def publish_activation(sender, user=None, **kwargs):  # pylint: disable=unused-argument
    """Receiver of USER_ACCOUNT_ACTIVATED (edx-platform sends ``sender=Registration, user=user``)."""
    if user is None:
        return
    try:
        organization = import_string(setting("ORGANIZATION_RESOLVER"))(user)
        if not organization:
            log.warning(
                "Course Access Groups: no organization for user %s; the account activation is not published "
                "(set COURSE_ACCESS_GROUPS['ORGANIZATION'] or ORGANIZATION_RESOLVER)",
                user.id,
            )
            return
        data = UserData(
            id=user.id,
            is_active=bool(user.is_active),
            pii=UserPersonalData(username=user.username, email=user.email, name=_full_name(user)),
        )
        responses = USER_ACCOUNT_ACTIVATED_EVENT.send_event(user=data, organization=str(organization))
    except Exception:  # pylint: disable=broad-except
        log.exception("Course Access Groups: could not publish the account activation of user %s", user.id)
        return
    for receiver, response in responses:
        if isinstance(response, Exception):
            log.error(
                "Course Access Groups: %s failed on the account activation of user %s: %s",
                getattr(receiver, "__name__", receiver), user.id, type(response).__name__,
            )
