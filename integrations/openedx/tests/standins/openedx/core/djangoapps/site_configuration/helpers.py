"""
Test fixture only (tests/standins/README.md): edx-platform's site configuration helpers answer
``get_value(name, default=None)`` from the current site's configuration; here from ``VALUES``.
"""

VALUES = {}


def get_value(name, default=None):
    return VALUES.get(name, default)
