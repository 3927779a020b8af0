"""
The Open edX event the service consumes when a learner activates their account. A stock LMS
defines no such event (it sends only the Django signal USER_ACCOUNT_ACTIVATED), so the plugin
defines it as openedx-events defines its own: an OpenEdxPublicSignal whose data are attrs
classes, from which the event bus derives the Avro schema. The data are the service's (SPEC
section 5): ``user`` as openedx-events' UserData {id, is_active, pii {username, email, name}},
and ``organization``.

Imported by apps.py when Django loads the app, so the event type exists before openedx_events'
``ready()`` reads EVENT_BUS_PRODUCER_CONFIG and looks it up.
"""

from openedx_events.learning.data import UserData
from openedx_events.tooling import OpenEdxPublicSignal

from .conf import ACTIVATED_EVENT_TYPE

try:
    # Another copy of the definition (a reloaded module) must not replace the one receivers hold.
    USER_ACCOUNT_ACTIVATED_EVENT = OpenEdxPublicSignal.get_signal_by_type(ACTIVATED_EVENT_TYPE)
except KeyError:
    USER_ACCOUNT_ACTIVATED_EVENT = OpenEdxPublicSignal(
        event_type=ACTIVATED_EVENT_TYPE,
        data={"user": UserData, "organization": str},
    )
