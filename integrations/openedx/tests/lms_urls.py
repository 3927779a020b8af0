"""The LMS's URLs as far as the plugin goes: edx-platform's lms/urls.py adds every LMS plugin's URLs with
edx-django-utils' get_plugin_url_patterns(ProjectType.LMS), the real one here (tests/test_console_link.py
registers the plugin's entry point first)."""

from edx_django_utils.plugins import get_plugin_url_patterns

urlpatterns = get_plugin_url_patterns("lms.djangoapp")
