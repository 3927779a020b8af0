"""
Course Access Groups for an Open edX LMS: publishes account activations to the service over the
Open edX event bus and enforces the service's access decisions through openedx-filters.
"""

__version__ = "0.1.0"
