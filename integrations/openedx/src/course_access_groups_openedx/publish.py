"""
Publishing account activations. Every way an LMS activates an account meets in one function,
``schedule_activation``: edx-platform's USER_ACCOUNT_ACTIVATED signal (Registration.activate()),
and any save of a User that turns ``is_active`` on or creates an active user (both password-reset
paths, the Django admin, management commands, registration with activation emails skipped). An
activation is scheduled once per user and transaction and sent by ``transaction.on_commit``: a
rolled-back activation sends nothing. It is sent at run time through the LMS's event bus producer
(``openedx_events.event_bus.get_producer()``, as Studio publishes its catalog events), on the topic
and with the switch COURSE_ACCESS_GROUPS has when it is sent, not when settings were loaded.
Nothing here may break the LMS request that activated the learner: every failure is logged (user
id only) and swallowed, as the platform's own producer does with its delivery errors.
"""

import logging

from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models.signals import post_init, post_save
from django.utils.module_loading import import_string
from openedx_events.event_bus import get_producer
from openedx_events.learning.data import UserData, UserPersonalData

from .conf import setting
from .events import USER_ACCOUNT_ACTIVATED_EVENT

log = logging.getLogger(__name__)

# Keyed by username, as the platform's own user events are: one learner's events stay in order.
EVENT_KEY_FIELD = "user.pii.username"
# Set on a User instance: its is_active as loaded, and whether its activation is scheduled.
_WAS_ACTIVE = "_course_access_groups_was_active"
_SCHEDULED = "_course_access_groups_activation_scheduled"


class _SendActivation:
    """The on_commit callback of one user's activation (its user_id lets a second schedule find it)."""

    def __init__(self, user):
        self.user = user
        self.user_id = user.pk

    def __call__(self):
        publish_activation(self.user)


def _pending(user_id):
    # Django keeps the callbacks of the open transaction in run_on_commit and drops them on rollback.
    return any(getattr(entry[1], "user_id", None) == user_id for entry in transaction.get_connection().run_on_commit)


def schedule_activation(user):
    """The one path of an activation: once per user and transaction, sent when it commits."""
    try:
        if user is None or user.pk is None or not user.is_active or getattr(user, _SCHEDULED, False):
            return
        setattr(user, _SCHEDULED, True)
        if not _pending(user.pk):
            transaction.on_commit(_SendActivation(user))
    except Exception:  # pylint: disable=broad-except
        log.exception("Course Access Groups: could not schedule the account activation of user %s", getattr(user, "pk", None))


def on_activation_signal(sender, user=None, **kwargs):  # pylint: disable=unused-argument
    """Receiver of USER_ACCOUNT_ACTIVATED (edx-platform sends ``sender=Registration, user=user``)."""
    schedule_activation(user)


def remember_is_active(sender, instance, **kwargs):  # pylint: disable=unused-argument
    """post_init of User: is_active as loaded (a deferred field is not read, which would query)."""
    setattr(instance, _WAS_ACTIVE, instance.__dict__.get("is_active"))


def on_user_saved(sender, instance, created, update_fields=None, raw=False, **kwargs):  # pylint: disable=unused-argument
    """post_save of User: a save that creates an active user or turns is_active on is an activation."""
    # A fixture being loaded (raw) is no activation; nor is a save that leaves is_active out.
    if raw or (update_fields is not None and "is_active" not in update_fields):
        return
    was_active = getattr(instance, _WAS_ACTIVE, None)
    is_active = bool(instance.__dict__.get("is_active"))
    setattr(instance, _WAS_ACTIVE, is_active)
    if not is_active:
        setattr(instance, _SCHEDULED, False)  # a later reactivation of this instance is one again
    elif created or was_active is False:
        schedule_activation(instance)


def connect(activation_signal):
    """Connects the receivers (apps.py, in ready())."""
    user_model = get_user_model()
    uid = "course_access_groups_openedx.publish"
    activation_signal.connect(on_activation_signal, dispatch_uid=f"{uid}.signal")
    post_init.connect(remember_is_active, sender=user_model, dispatch_uid=f"{uid}.post_init")
    post_save.connect(on_user_saved, sender=user_model, dispatch_uid=f"{uid}.post_save")


def _full_name(user):
    # edx-platform keeps the display name on the UserProfile; Django's own User has first/last names.
    profile_name = getattr(getattr(user, "profile", None), "name", None)
    return profile_name or user.get_full_name()


def activation_data(user, organization):
    """The activation event's data: the user as openedx-events' UserData, and the organization."""
    return {
        "user": UserData(
            id=user.id,
            is_active=bool(user.is_active),
            pii=UserPersonalData(username=user.username, email=user.email, name=_full_name(user)),
        ),
        "organization": str(organization),
    }


def send_activation(data):
    """Sends one activation event on the event bus (on ACTIVATION_TOPIC as it is now); returns its metadata."""
    metadata = USER_ACCOUNT_ACTIVATED_EVENT.generate_signal_metadata()
    get_producer().send(
        signal=USER_ACCOUNT_ACTIVATED_EVENT,
        topic=setting("ACTIVATION_TOPIC"),
        event_key_field=EVENT_KEY_FIELD,
        event_data=data,
        event_metadata=metadata,
    )
    return metadata


def publish_activation(user):
    """Sends one activation now, on the event bus and to the in-process receivers of the event."""
    if not setting("PUBLISH_ACTIVATIONS"):
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
        data = activation_data(user, organization)
        metadata = send_activation(data)
        responses = USER_ACCOUNT_ACTIVATED_EVENT.send_event_with_custom_metadata(metadata, **data)
    except Exception:  # pylint: disable=broad-except
        log.exception("Course Access Groups: could not publish the account activation of user %s", user.id)
        return
    for receiver, response in responses:
        if isinstance(response, Exception):
            log.error(
                "Course Access Groups: %s failed on the account activation of user %s: %s",
                getattr(receiver, "__name__", receiver), user.id, type(response).__name__,
            )
