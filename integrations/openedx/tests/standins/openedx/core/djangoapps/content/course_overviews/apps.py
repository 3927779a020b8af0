from django.apps import AppConfig


class CourseOverviewsConfig(AppConfig):
    name = "openedx.core.djangoapps.content.course_overviews"
    label = "course_overviews"
