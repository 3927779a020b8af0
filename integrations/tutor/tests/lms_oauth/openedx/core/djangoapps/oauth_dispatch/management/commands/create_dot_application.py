"""
edx-platform's openedx/core/djangoapps/oauth_dispatch/management/commands/create_dot_application.py,
reproduced: the same arguments (``add_arguments``: names, flags, dests, defaults and the grant type
choices taken from DOT's Application.GRANT_TYPES) and the same effect (``handle``):

- the application is found by owner and name; it is created when missing, its fields set again
  only with ``--update`` (otherwise left as it is);
- fields: redirect URIs as given, client type public with ``--public`` and confidential without,
  the grant type, skip_authorization, and the client id and secret when given (else DOT makes them);
- with ``--scopes`` (comma-separated), one ApplicationAccess: created when missing, its scopes
  replaced only with ``--update``.

The real command logs the client secret at INFO; this one logs nothing.
"""

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from oauth2_provider.models import get_application_model

from openedx.core.djangoapps.oauth_dispatch.models import ApplicationAccess

Application = get_application_model()


class Command(BaseCommand):
    help = "Creates a Django OAuth Toolkit (DOT) Application Instance."

    def add_arguments(self, parser):
        parser.add_argument("name", action="store")
        parser.add_argument("username", action="store")
        parser.add_argument("--grant-type", action="store", dest="grant_type", default=Application.GRANT_CLIENT_CREDENTIALS,
                            choices=[choice for choice, _ in Application.GRANT_TYPES])
        parser.add_argument("--redirect-uris", action="store", dest="redirect_uris", default="")
        parser.add_argument("--public", action="store_true", dest="public", default=False)
        parser.add_argument("--skip-authorization", action="store_true", dest="skip_authorization")
        parser.add_argument("--client-id", action="store", dest="client_id", default="")
        parser.add_argument("--client-secret", action="store", dest="client_secret", default="")
        parser.add_argument("--scopes", action="store", dest="scopes", default="")
        parser.add_argument("--update", action="store_true", dest="update")

    def handle(self, *args, **options):
        owner = get_user_model().objects.get(username=options["username"])
        fields = {
            "redirect_uris": options["redirect_uris"],
            "client_type": Application.CLIENT_PUBLIC if options["public"] else Application.CLIENT_CONFIDENTIAL,
            "authorization_grant_type": options["grant_type"],
            "skip_authorization": options["skip_authorization"],
        }
        fields.update({key: options[key] for key in ("client_id", "client_secret") if options[key]})

        application = Application.objects.filter(user=owner, name=options["name"]).first()
        if application is None:
            application = Application.objects.create(user=owner, name=options["name"], **fields)
        elif options["update"]:
            for key, value in fields.items():
                setattr(application, key, value)
            application.save()

        if options["scopes"]:
            access = ApplicationAccess.objects.filter(application_id=application.id).first()
            if access is None:
                ApplicationAccess.objects.create(application_id=application.id, scopes=options["scopes"])
            elif options["update"]:
                access.scopes = options["scopes"]
                access.save()
