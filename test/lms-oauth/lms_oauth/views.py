"""
The LMS's views that a sign-in through the LMS touches, each reproducing the call path of
openedx/edx-platform:
- ``AccessTokenView``: openedx/core/djangoapps/oauth_dispatch/views.py ``AccessTokenView.dispatch``
  then ``_get_jwt_content_from_access_token_content`` (named ``_build_jwt_response_from_access_token_response``
  in earlier releases): DOT's ``TokenView`` answers, and with ``token_type=jwt`` its opaque token
  becomes a JWT from oauth_dispatch/jwt.py ``create_jwt_token_dict``, asymmetric when the request
  posts ``asymmetric_jwt``.
- ``logout``: openedx/core/djangoapps/user_authn/views/logout.py ``LogoutView``: ends the session,
  then goes to ``redirect_url`` when it is a safe target (``LOGIN_REDIRECT_WHITELIST``), else home.
- ``home``: the LMS page where the LMS plugin shows the console's link to who may use it.
"""

import json
import os
import sys
from urllib.parse import urlsplit

from django.conf import settings
from django.contrib.auth import logout as end_session
from django.http import HttpResponse, HttpResponseRedirect
from django.utils.html import escape
from oauth2_provider.models import get_access_token_model
from oauth2_provider.views import TokenView

from .roles import roles_of

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "helpers"))
import lms_jwt_mint as mint  # noqa: E402  (the minting the oracle uses too: test/helpers/lms_jwt_mint.py)

AccessToken = get_access_token_model()


def _get_token_type(request):
    """views.py ``_get_token_type``: the POSTed token_type, else the X-Token-Type header."""
    return request.POST.get("token_type", request.META.get("HTTP_X_TOKEN_TYPE", "no_token_type_supplied")).lower()


class AccessTokenView(TokenView):
    """views.py ``AccessTokenView``: DOT's TokenView, then the JWT when ``token_type=jwt``."""

    def post(self, request, *args, **kwargs):
        response = super().post(request, *args, **kwargs)
        if response.status_code == 200 and _get_token_type(request) == "jwt":
            opaque_token_dict = json.loads(response.content.decode("utf-8"))
            # Any non-empty value counts, as upstream reads it.
            use_asymmetric_key = request.POST.get("asymmetric_jwt", False)
            response.content = json.dumps(create_jwt_token_dict(opaque_token_dict, use_asymmetric_key))
        return response


def create_jwt_token_dict(token_dict, use_asymmetric_key):
    """
    jwt.py ``create_jwt_token_dict``: the opaque token's user and scopes, the JWT's own lifetime
    (``JWT_ACCESS_TOKEN_EXPIRE_SECONDS``), the application's grant type; ``_create_jwt`` and
    ``_encode_and_sign`` through test/helpers/lms_jwt_mint.py. No restricted applications here
    (``is_restricted`` false, no filters), as for any application create_dot_application makes.
    """
    access_token = AccessToken.objects.select_related("user", "application").get(token=token_dict["access_token"])
    user = access_token.user
    expires_in = settings.JWT_ACCESS_TOKEN_EXPIRE_SECONDS
    payload = mint.create_jwt_payload(
        {
            "id": user.id,
            "username": user.username,
            "email": user.email,
            "is_staff": user.is_staff,
            "is_superuser": user.is_superuser,
            "is_active": user.is_active,
            "name": user.get_full_name() or None,  # UserProfile.name; None when there is none
            "first_name": user.first_name,
            "last_name": user.last_name,
        },
        settings.JWT_AUTH["JWT_ISSUER"],
        settings.JWT_AUTH["JWT_AUDIENCE"],
        scopes=token_dict["scope"].split(" "),
        expires_in=expires_in,
        roles=roles_of(user),
        grant_type=access_token.application.authorization_grant_type,
    )
    if use_asymmetric_key:
        jwt = mint.encode_and_sign(payload, json.loads(settings.JWT_AUTH["JWT_PRIVATE_SIGNING_JWK"]), algorithm=settings.JWT_AUTH["JWT_SIGNING_ALGORITHM"])
    else:
        jwt = mint.encode_and_sign_symmetric(payload, settings.JWT_AUTH["JWT_SECRET_KEY"])
    return {**token_dict, "access_token": jwt, "token_type": "JWT", "expires_in": expires_in}


def _is_safe_redirect(url):
    host = urlsplit(url).netloc
    return bool(host) and host in settings.LOGIN_REDIRECT_WHITELIST


def logout(request):
    """logout.py ``LogoutView``: the session ends whatever happens next."""
    end_session(request)
    target = request.GET.get("redirect_url") or request.GET.get("next")
    return HttpResponseRedirect(target if target and _is_safe_redirect(target) else "/")


def home(request):
    """The LMS's page with the console's link (the LMS plugin shows it to the users who may use it)."""
    if request.user.is_authenticated:
        who = f"<p id=\"who\">Signed in as {escape(request.user.username)}. <a href=\"/logout\">Sign out</a></p>"
    else:
        who = "<p id=\"who\">Not signed in. <a href=\"/login\">Sign in</a></p>"
    link = f"<p><a id=\"console-link\" href=\"{escape(settings.CONSOLE_LOGIN_URL)}\">Course Access Groups console</a></p>"
    return HttpResponse(f"<!doctype html><html lang=\"en\"><head><title>Stand-in LMS</title></head><body><h1>Stand-in LMS</h1>{who}{link}</body></html>")
