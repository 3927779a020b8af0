"""
The openedx image's install lines as Tutor renders them (the plugin's
openedx-dockerfile-post-python-requirements patch), executed in a fresh Python 3.11 environment
standing in for the image's python-requirements stage (Python 3.11 as Tutor 20 and 21 build it;
its /openedx/venv gets pip 24.0, setuptools 69.1.1 and wheel 0.43.0 first, as Tutor's Dockerfile
does): each COPY from the rendered build context into a folder standing in for the image's root,
each RUN with its --mount options dropped and PIP_COMMAND unset (Tutor 20's plain pip; 21 and 22
set it to `uv pip`). Run once (Tutor 21), not per Tutor version: the lines and the carried source
are the same in each (test_tutor_plugin.py checks the source by hash in every version).
"""

import json
import os
import re
import shutil
import subprocess

from test_tutor_plugin import installed, openedx_install_lines, plugin_version, saved  # noqa: F401  pylint: disable=unused-import


def commands(lines):
    """The Dockerfile instructions of `lines`: continuation lines joined, comments dropped."""
    joined = re.sub(r"\\\n\s*", " ", lines)
    return [line.strip() for line in joined.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def test_the_rendered_install_lines_install_the_carried_lms_plugin_in_python_3_11(installed, tmp_path):  # noqa: F811
    root = saved(installed, tmp_path)
    build = root / "env" / "build" / "openedx"
    instructions = commands(openedx_install_lines((build / "Dockerfile").read_text()))
    base = subprocess.run([os.environ["LMS_PYTHON"], "-c", "import sys; print(sys._base_executable)"],
                          check=True, capture_output=True, text=True).stdout.strip()
    venv = tmp_path / "openedx-venv"
    subprocess.run([base, "-m", "venv", str(venv)], check=True)
    pip_setup = [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                 "setuptools==69.1.1", "pip==24.0", "wheel==0.43.0"]
    subprocess.run(pip_setup, check=True, capture_output=True, text=True)
    image = tmp_path / "image"
    env = {k: v for k, v in os.environ.items() if k not in ("PIP_COMMAND", "PYTHONPATH", "VIRTUAL_ENV")}
    env.update(PATH=f"{venv / 'bin'}{os.pathsep}{env['PATH']}", VIRTUAL_ENV=str(venv))
    copied = {}
    ran = 0
    for instruction in instructions:
        kind, _, rest = instruction.partition(" ")
        if kind == "COPY":
            source, destination = rest.split()
            copied[destination] = str(image) + destination
            shutil.copytree(build / source, copied[destination])
        elif kind == "RUN":
            command = re.sub(r"--mount=\S+\s*", "", rest)
            for destination, local in copied.items():
                command = command.replace(destination, local)
            done = subprocess.run(["bash", "-c", command], env=env, capture_output=True, text=True)
            assert done.returncode == 0, f"{command}:\n{done.stdout}\n{done.stderr}"
            ran += 1
        else:
            raise AssertionError(f"an instruction this stand-in does not run: {instruction}")
    assert ran == 1 and copied
    probe = ("import json, confluent_kafka, course_access_groups_openedx, setuptools;"
             "from importlib.metadata import entry_points, version;"
             "print(json.dumps([[e.value for e in entry_points(group='lms.djangoapp')],"
             " version('course-access-groups-openedx'), setuptools.__version__]))")
    out = subprocess.run([str(venv / "bin" / "python"), "-c", probe], check=True, capture_output=True, text=True, env=env,
                         cwd=tmp_path).stdout
    lms_apps, version, setuptools_version = json.loads(out)
    # Registered as an LMS plugin (beside its dependencies' own, e.g. edx-toggles').
    assert "course_access_groups_openedx.apps:CourseAccessGroupsOpenedxConfig" in lms_apps
    assert (version, setuptools_version) == (plugin_version(installed), "69.1.1")
