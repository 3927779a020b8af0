"""Stages the sources the Tutor plugin carries when its wheel is built from a git checkout.

The wheel carries the service's build context and the LMS plugin's source
(scripts/stage-tutor-plugin.sh copies them into the package; they are git-ignored there). The
release stages them before it builds; `pip install "git+<repository>@<version>#subdirectory=integrations/tutor"`
builds from a checkout where nobody has, so the build stages them itself, from the checkout around
this folder. Everything else is in pyproject.toml.
"""

import os
import subprocess

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
STAGE = os.path.join(HERE, "..", "..", "scripts", "stage-tutor-plugin.sh")
PACKAGE = os.path.join(HERE, "tutorcourse_access_groups", "templates")
CARRIED = (
    os.path.join(PACKAGE, "course-access-groups", "build", "course-access-groups", "Dockerfile"),
    os.path.join(PACKAGE, "build", "openedx", "course-access-groups-openedx", "pyproject.toml"),
)


class BuildPyWithCarriedSources(build_py):
    """build_py, after staging the carried sources when they are missing (package data is listed
    when build_py runs, so what is staged here is in the wheel)."""

    def run(self):
        if not all(os.path.exists(path) for path in CARRIED):
            if not os.path.exists(STAGE):
                raise SystemExit(
                    "tutor-contrib-course-access-groups: the carried sources are not staged and no "
                    "repository checkout is around this folder to stage them from; install the release's wheel"
                )
            subprocess.run(["bash", STAGE], check=True, stdout=subprocess.DEVNULL)
        super().run()


setup(cmdclass={"build_py": BuildPyWithCarriedSources})
