"""The Dockerfile, read as data (it cannot be built here): a pinned multi-stage build whose
runtime stage installs exactly this package's wheel, downloads nothing, runs as non-root and
starts the console script."""

from __future__ import annotations

import json
import re
import shlex
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.harness.repository import REPO

NETWORK_TOOLS = {"curl", "wget", "apt-get", "apt", "apk", "git"}
PINNED_TAG = re.compile(r"^python:3\.\d+\.\d+-slim-[a-z]+(@sha256:[0-9a-f]{64})?$")


@dataclass
class Stage:
    base: str
    name: str | None
    instructions: list[tuple[str, str]] = field(default_factory=list)

    def all(self, keyword: str) -> list[str]:
        return [value for key, value in self.instructions if key == keyword]


def _instructions(text: str) -> list[tuple[str, str]]:
    """(KEYWORD, arguments) per instruction: comments dropped, continuations joined."""
    logical: list[str] = []
    pending = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        logical.append(pending + line)
        pending = ""
    assert not pending, "the Dockerfile ends inside a continuation"
    return [(line.split(None, 1)[0].upper(), line.split(None, 1)[1]) for line in logical]


def _stages(text: str) -> tuple[dict[str, str], list[Stage]]:
    args: dict[str, str] = {}
    stages: list[Stage] = []
    for keyword, value in _instructions(text):
        if keyword == "FROM":
            words = value.split()
            base = re.sub(r"\$\{(\w+)\}", lambda m: args[m.group(1)], words[0])
            name = words[2] if len(words) == 3 and words[1].upper() == "AS" else None
            stages.append(Stage(base, name))
        elif not stages:
            assert keyword == "ARG", f"{keyword} before the first FROM"
            key, _, default = value.partition("=")
            args[key] = default
        else:
            stages[-1].instructions.append((keyword, value))
    return args, stages


def _commands(run: str) -> list[list[str]]:
    """The commands of a shell-form RUN (its --mount flags dropped), split on && and ;."""
    words = shlex.split(run)
    while words and words[0].startswith("--"):
        words.pop(0)
    commands: list[list[str]] = [[]]
    for word in words:
        if word in {"&&", ";", "||"}:
            commands.append([])
        else:
            commands[-1].append(word)
    return [command for command in commands if command]


def _pip_installs(command: list[str]) -> list[str] | None:
    """The arguments after ``pip install`` (any pip, or ``python -m pip``), else None."""
    for index, word in enumerate(command[:-1]):
        if Path(word).name.startswith("pip") and command[index + 1] == "install":
            return command[index + 2 :]
        if (
            word == "-m"
            and command[index + 1] == "pip"
            and command[index + 2 : index + 3] == ["install"]
        ):
            return command[index + 3 :]
    return None


DOCKERFILE = (REPO / "Dockerfile").read_text()
ARGS, STAGES = _stages(DOCKERFILE)
FINAL = STAGES[-1]
PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]


def test_the_build_has_a_build_stage_and_a_runtime_stage_on_one_pinned_base() -> None:
    """Two or more stages, each FROM a python slim image pinned to a full patch version (or a
    digest): never a moving tag such as ``latest`` or ``3.11-slim``."""
    assert len(STAGES) >= 2
    for stage in STAGES:
        assert PINNED_TAG.match(stage.base), stage.base
    assert len({stage.base for stage in STAGES}) == 1, "the venv is built for one base"


def test_the_build_stage_builds_this_repositorys_wheel() -> None:
    """Stage 1 copies the package's sources (each exists here) and runs ``pip wheel .``."""
    build = STAGES[0]
    for copy in build.all("COPY"):
        *sources, _ = copy.split()
        for source in sources:
            assert (REPO / source).exists(), source
    wheel_runs = [
        command
        for run in build.all("RUN")
        for command in _commands(run)
        if "wheel" in command and command[-1] == "."
    ]
    assert wheel_runs, build.all("RUN")


def test_the_runtime_stage_installs_exactly_this_packages_wheel_offline() -> None:
    """Every pip install in the runtime stage uses --no-index and names one requirement:
    this package's wheel, at pyproject's version, from the build stage."""
    wheel = f"/wheels/kubelet_companion-{PROJECT['version']}-py3-none-any.whl"
    installs = [
        arguments
        for run in FINAL.all("RUN")
        for command in _commands(run)
        if (arguments := _pip_installs(command)) is not None
    ]
    assert installs, "the runtime stage installs nothing"
    for arguments in installs:
        assert "--no-index" in arguments
        requirements = [
            word
            for index, word in enumerate(arguments)
            if not word.startswith("-") and arguments[index - 1] not in {"--find-links", "-f"}
        ]
        assert requirements == [wheel]
    mounts = [run for run in FINAL.all("RUN") if "--mount=" in run]
    assert any(f"from={STAGES[0].name}" in run for run in mounts)


def test_the_runtime_stage_downloads_nothing() -> None:
    """No curl, wget, package manager or git in any RUN of the runtime stage, and no ADD
    (which can fetch URLs)."""
    for run in FINAL.all("RUN"):
        for command in _commands(run):
            assert not NETWORK_TOOLS & {Path(word).name for word in command}, command
    assert not FINAL.all("ADD")


def test_the_runtime_runs_as_non_root_and_starts_the_console_script() -> None:
    """The last USER is a non-zero uid, and ENTRYPOINT (exec form) is the console script
    pyproject declares, from the venv the stage made."""
    (*_, user) = FINAL.all("USER")
    assert int(user.split(":")[0]) != 0
    (entrypoint,) = FINAL.all("ENTRYPOINT")
    argv = json.loads(entrypoint)
    (script,) = PROJECT["scripts"]
    assert argv == [f"/opt/kubelet-companion/bin/{script}"]


@pytest.mark.parametrize(
    ("path", "shipped"),
    [
        pytest.param("agent/cli.py", True, id="sources-go-in"),
        pytest.param("pyproject.toml", True, id="project-goes-in"),
        pytest.param(".venv/bin/python", False, id="venv-stays-out"),
        pytest.param("tests/conftest.py", False, id="tests-stay-out"),
    ],
)
def test_the_build_context_is_only_what_the_image_needs(path: str, shipped: bool) -> None:
    """.dockerignore keeps the context to the package's sources: no venv, tests or .git."""
    patterns = [
        line.strip()
        for line in (REPO / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    included = False
    for pattern in patterns:
        negate = pattern.startswith("!")
        glob = pattern.removeprefix("!").rstrip("/")
        if glob in {"*", path} or path.startswith(glob + "/"):
            included = negate
    assert included is shipped
