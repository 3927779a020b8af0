"""Test fixture: a stand-in package of edx-platform (see tests/standins/README.md)."""
