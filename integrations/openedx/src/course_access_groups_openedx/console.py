"""
The admin console's link in the LMS, for the users the service lets in.

A page of the LMS itself, ``/course_access_groups/`` (the plugin's URLs, added by edx-platform's
``get_plugin_url_patterns``), rendered by Django: no MFE to rebuild, no theme to change. It links to
the console's sign-in, ``<PUBLIC_URL>/course_access_groups/console/oauth/login``, which takes the
browser through the LMS's OAuth2 authorization and back to the console, signed in.

Who sees the link: the users whose LMS JWT the service accepts for the console, read from the same
sources the JWT is made from: platform staff (``is_staff``: the JWT's ``administrator``) and the
administrators of an organization (roles.py: ``course_access_groups_admin:<org>`` in the JWT's
``roles``). Anyone else signed in gets a 403 page that says why and has no link; a visitor who is
not signed in is sent to the LMS's sign-in first. A superuser who is not staff does not see it: the
service reads ``administrator``, not ``superuser``.
"""

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe
from django.views.decorators.cache import never_cache

from .conf import setting
from .roles import course_access_groups_admin_roles

CONSOLE_LOGIN_PATH = "/course_access_groups/console/oauth/login"


def console_login_url():
    """Where the link points: the console's sign-in on the service, or "" when PUBLIC_URL is not set."""
    root = (setting("PUBLIC_URL") or "").rstrip("/")
    return root + CONSOLE_LOGIN_PATH if root else ""


def administered_organizations(user):
    """The organizations `user` administers in the service (the JWT's course_access_groups_admin roles)."""
    return [org for _role, org in course_access_groups_admin_roles(user)]


def may_use_console(user):
    """Whether the service takes `user`'s LMS token in the console: platform staff, or an organization's administrator."""
    return bool(getattr(user, "is_authenticated", False) and (user.is_staff or administered_organizations(user)))


PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Course Access Groups</title></head>
<body><main><h1>Course Access Groups</h1>{}</main></body></html>"""


@never_cache
@login_required
def console_link(request):
    url = console_login_url()
    if not url:
        raise Http404("COURSE_ACCESS_GROUPS['PUBLIC_URL'] is not set")
    user = request.user
    if not may_use_console(user):
        body = format_html(
            "<p>The admin console is for platform staff and the administrators of an organization. "
            "Your account ({}) is neither; an administrator of your organization can give you the role.</p>",
            user.get_username(),
        )
        return HttpResponse(PAGE.format(body), status=403)
    if user.is_staff:
        scope = mark_safe("<p>As platform staff you may manage every organization.</p>")  # noqa: S308  a constant
    else:
        orgs = format_html_join(", ", "<strong>{}</strong>", ((org,) for org in administered_organizations(user)))
        scope = format_html("<p>You administer {}.</p>", orgs)
    body = format_html('{}<p><a href="{}">Open the admin console</a> (you sign in with this LMS account).</p>', scope, url)
    return HttpResponse(PAGE.format(body))
