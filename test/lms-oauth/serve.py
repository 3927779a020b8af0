"""
Runs the stand-in LMS OAuth2 provider (README.md) until SIGTERM, then prints one JSON line on
stdout once it answers: its URL, and what the service needs to trust it (LMS_JWT_ISSUERS,
LMS_JWT_PUBLIC_SIGNING_JWK_SET).

    python serve.py --port 0 --redirect-uri URI [--redirect-uri URI ...] --client-id ID --client-secret SECRET
                    [--issuer URL] [--console-login-url URL] [--jwt-expire-seconds N] [--redirect-whitelist HOST ...]

A fresh SQLite database and a fresh RSA signing key each run; the users of USERS and the OAuth2
application, registered as ``create_dot_application`` registers it (openedx/core/djangoapps/
oauth_dispatch/management/commands/create_dot_application.py: authorization-code, confidential,
skip_authorization, the redirect URIs given, ``--update`` semantics).
"""

import argparse
import json
import os
import secrets
import signal
import sys
import tempfile
import threading
from socketserver import ThreadingMixIn
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "helpers"))
import lms_jwt_mint as mint  # noqa: E402

PASSWORD = "lms-stand-in-password"
# id, username, is_staff: ada administers org-a, bo org-a and org-b (lms_oauth/roles.py), sam is
# platform staff, nora has only another application's role; course_access_groups owns the application.
USERS = [(7, "ada", False), (8, "bo", False), (9, "sam", True), (10, "nora", False), (50, "course_access_groups", True)]
APPLICATION_NAME = "course-access-groups-sso"


class ThreadingServer(ThreadingMixIn, WSGIServer):
    daemon_threads = True


class QuietHandler(WSGIRequestHandler):
    def log_message(self, *args):
        pass


def parse_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--issuer", default=None, help="JWT_ISSUER (default: <url>/oauth2, as Tutor sets it)")
    parser.add_argument("--redirect-uri", action="append", required=True)
    parser.add_argument("--client-id", required=True)
    parser.add_argument("--client-secret", required=True)
    parser.add_argument("--console-login-url", default="")
    parser.add_argument("--jwt-expire-seconds", type=int, default=3600)
    parser.add_argument("--redirect-whitelist", action="append", default=[])
    return parser.parse_args()


def main():
    args = parse_args()
    workdir = tempfile.mkdtemp(prefix="lms-stand-in-")
    private_jwk, public_jwk = mint.rsa_jwks("openedx")
    # Bound first, so the issuer can name the port the system chose.
    server = make_server(args.host, args.port, lambda e, s: [], server_class=ThreadingServer, handler_class=QuietHandler)
    url = f"http://{args.host}:{server.server_port}"
    issuer = args.issuer or f"{url}/oauth2"
    os.environ.update(
        DJANGO_SETTINGS_MODULE="lms_oauth.settings",
        LMS_STAND_IN_DJANGO_SECRET=secrets.token_urlsafe(32),
        LMS_STAND_IN_DB=os.path.join(workdir, "lms.sqlite3"),
        LMS_STAND_IN_ISSUER=issuer,
        LMS_STAND_IN_PRIVATE_JWK=json.dumps(private_jwk),
        LMS_STAND_IN_JWT_EXPIRE_SECONDS=str(args.jwt_expire_seconds),
        LMS_STAND_IN_REDIRECT_WHITELIST=json.dumps(args.redirect_whitelist),
        LMS_STAND_IN_CONSOLE_LOGIN_URL=args.console_login_url,
    )
    import django

    django.setup()
    from django.contrib.auth.models import User
    from django.core.management import call_command
    from django.core.wsgi import get_wsgi_application
    from oauth2_provider.models import get_application_model

    call_command("migrate", verbosity=0, interactive=False, run_syncdb=True)
    for user_id, username, is_staff in USERS:
        User.objects.create_user(id=user_id, username=username, email=f"{username}@lms.example.com", password=PASSWORD, is_staff=is_staff)
    register_application(get_application_model(), User.objects.get(username="course_access_groups"), args)
    server.set_app(get_wsgi_application())

    def stop(*_):
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    print(
        json.dumps(
            {
                "url": url,
                "issuers": json.dumps([{"ISSUER": issuer, "AUDIENCE": "openedx"}]),
                "publicKeySet": json.dumps({"keys": [public_jwk]}),
                "password": PASSWORD,
            }
        ),
        flush=True,
    )
    try:
        server.serve_forever()
    finally:
        server.server_close()
        import shutil

        shutil.rmtree(workdir, ignore_errors=True)


def register_application(Application, user, args):
    """create_dot_application NAME course_access_groups --grant-type authorization-code --redirect-uris ... --skip-authorization --update."""
    kwargs = dict(
        redirect_uris=" ".join(args.redirect_uri),
        client_type=Application.CLIENT_CONFIDENTIAL,
        authorization_grant_type=Application.GRANT_AUTHORIZATION_CODE,
        skip_authorization=True,
        client_id=args.client_id,
        client_secret=args.client_secret,
    )
    application = Application.objects.filter(user=user, name=APPLICATION_NAME).first()
    if application:
        for key, value in kwargs.items():
            setattr(application, key, value)
        application.save()
    else:
        Application.objects.create(user=user, name=APPLICATION_NAME, **kwargs)


if __name__ == "__main__":
    main()
