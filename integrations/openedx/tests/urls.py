"""No views: the tests need only the URL resolver's 404 handler (Django's default)."""

urlpatterns = []
