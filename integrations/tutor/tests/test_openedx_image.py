"""
The openedx image's install lines as Tutor renders them (the plugin's
openedx-dockerfile-post-python-requirements patch), executed in a fresh Python environment standing
in for the image's python-requirements stage, as the rendered Dockerfile makes it: the Python minor
version of its PYTHON_VERSION (3.11 in Tutor 20 and 21, 3.12 in 22) and the setuptools it pins
(69.1.1 in Tutor 20 and 21, 80.9.0 in 22), with pip 24.0 and wheel 0.43.0 as Tutor 20 installs
them; each COPY from the rendered build context into a folder standing in for the image's root,
each RUN with its --mount options dropped and PIP_COMMAND as the Dockerfile sets it (Tutor 20's
plain pip; `uv pip` in 21 and 22, with the uv the tests give as UV, else plain pip). Run for every Tutor release line (the Jest test runs this file with each
Tutor's environment): the Python, the setuptools and the rendering are that Tutor's.
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


def image_python_and_setuptools(dockerfile):
    """The Python minor version (ARG PYTHON_VERSION) and the setuptools pin of the rendered openedx Dockerfile."""
    python = re.search(r"^ARG PYTHON_VERSION=(3\.\d+)\.\d+$", dockerfile, re.MULTILINE).group(1)
    return python, re.search(r"setuptools==(\d+\.\d+\.\d+)", dockerfile).group(1)


def test_the_rendered_install_lines_install_the_carried_lms_plugin_in_the_images_python(installed, tmp_path):  # noqa: F811
    root = saved(installed, tmp_path)
    build = root / "env" / "build" / "openedx"
    dockerfile = (build / "Dockerfile").read_text()
    instructions = commands(openedx_install_lines(dockerfile))
    python, setuptools_pin = image_python_and_setuptools(dockerfile)
    # The LMS plugin's test environments (LMS_PYTHON: 3.11; LMS_PYTHON_312: 3.12) give the interpreter.
    lms_python = {"3.11": os.environ["LMS_PYTHON"], "3.12": os.environ.get("LMS_PYTHON_312", "")}[python]
    assert lms_python, f"this Tutor's openedx image runs Python {python}: set LMS_PYTHON_312"
    base = subprocess.run([lms_python, "-c", "import sys; print(sys._base_executable)"],
                          check=True, capture_output=True, text=True).stdout.strip()
    venv = tmp_path / "openedx-venv"
    pins = [f"setuptools=={setuptools_pin}", "pip==24.0", "wheel==0.43.0"]
    if os.environ.get("UV"):
        # The same environment (that Python, those three pins) made by uv from its cache: ensurepip
        # and a pip run took 10 s of CPU for each Tutor, uv takes half a second.
        subprocess.run([base, "-m", "venv", "--without-pip", str(venv)], check=True)
        pip_setup = [os.environ["UV"], "pip", "install", "--quiet", "--python", str(venv / "bin" / "python"), *pins]
    else:
        subprocess.run([base, "-m", "venv", str(venv)], check=True)
        pip_setup = [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *pins]
    subprocess.run(pip_setup, check=True, capture_output=True, text=True)
    image = tmp_path / "image"
    env = {k: v for k, v in os.environ.items() if k not in ("PIP_COMMAND", "PYTHONPATH", "VIRTUAL_ENV")}
    env.update(PATH=f"{venv / 'bin'}{os.pathsep}{env['PATH']}", VIRTUAL_ENV=str(venv))
    if "ENV PIP_CONSTRAINT=/etc/openedx-build-constraints.txt" in dockerfile:
        # Tutor 21 and 22 pin setuptools for every build (isolated ones too) through this file.
        constraints = tmp_path / "openedx-build-constraints.txt"
        constraints.write_text(f"setuptools=={setuptools_pin}\n")
        env.update(PIP_CONSTRAINT=str(constraints), PIP_BUILD_CONSTRAINT=str(constraints), UV_BUILD_CONSTRAINT=str(constraints))
    if 'ARG PIP_COMMAND="uv pip"' in dockerfile and os.environ.get("UV"):
        # Tutor 21 and 22 install with uv (into VIRTUAL_ENV), as here when the tests give one (UV).
        env["PIP_COMMAND"] = f"{os.environ['UV']} pip"
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
    probe = ("import json, sys, confluent_kafka, course_access_groups_openedx, setuptools;"
             "from importlib.metadata import entry_points, version;"
             "print(json.dumps([[e.value for e in entry_points(group='lms.djangoapp')],"
             " version('course-access-groups-openedx'), setuptools.__version__, '%d.%d' % sys.version_info[:2]]))")
    out = subprocess.run([str(venv / "bin" / "python"), "-c", probe], check=True, capture_output=True, text=True, env=env,
                         cwd=tmp_path).stdout
    lms_apps, version, setuptools_version, python_version = json.loads(out)
    # Registered as an LMS plugin (beside its dependencies' own, e.g. edx-toggles').
    assert "course_access_groups_openedx.apps:CourseAccessGroupsOpenedxConfig" in lms_apps
    assert (version, setuptools_version, python_version) == (plugin_version(installed), setuptools_pin, python)
