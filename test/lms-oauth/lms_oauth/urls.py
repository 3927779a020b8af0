"""The LMS's URLs for these pieces (oauth_dispatch/urls.py: ``^authorize/?$``, ``^access_token/?$``; ``/login``, ``/logout``)."""

from django.contrib.auth.views import LoginView
from django.urls import re_path
from oauth2_provider.views import AuthorizationView

from . import views

urlpatterns = [
    re_path(r"^oauth2/authorize/?$", AuthorizationView.as_view(), name="authorize"),
    re_path(r"^oauth2/access_token/?$", views.AccessTokenView.as_view(), name="access_token"),
    re_path(r"^login/?$", LoginView.as_view(template_name="registration/login.html"), name="login"),
    re_path(r"^logout/?$", views.logout, name="logout"),
    re_path(r"^$", views.home, name="home"),
]
