"""
Test fixture only (tests/standins/README.md): edx-platform's
openedx/core/djangoapps/signals/signals.py defines ``USER_ACCOUNT_ACTIVATED = Signal()``
("providing_args=['user']") and Registration.activate() sends it with
``send_robust(self.__class__, user=self.user)``.
"""

from django.dispatch import Signal

USER_ACCOUNT_ACTIVATED = Signal()  # Signal indicating email verification
