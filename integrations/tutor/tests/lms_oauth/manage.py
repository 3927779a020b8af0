#!/usr/bin/env python
"""
`./manage.py lms COMMAND ...`, as the openedx image runs edx-platform's manage.py (the service
first, then Django's own command line), over this LMS-shaped project (README.md).
"""

import os
import sys

if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] != "lms":
        sys.exit("usage: ./manage.py lms COMMAND [ARGS...]")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "lms_oauth_settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line([sys.argv[0], *sys.argv[2:]])
