"""Install or remove the node agent as a systemd unit (scripts/install-systemd, uninstall-systemd).

Why a Python script and not shell: every path is joined, compared and written as data, and every
command is an argument list, so nothing an operator passes (``--root``, ``--wheel``, pip
arguments) is ever parsed by a shell. Standard library only: it runs with the host's Python
before the agent's virtualenv exists.

What it manages, each below ``--root`` (``/`` by default):

- ``/opt/kubelet-companion``: a virtualenv holding the package (from the checkout, or
  ``--wheel``);
- ``/etc/systemd/system/kubelet-companion.service``: ours, replaced when it changes
  (operators customise it with drop-ins, ``systemctl edit``);
- ``/etc/kubelet-companion/agent.yaml`` and ``env.example``: the operator's once installed.
  A file that is there is never overwritten: when ours differs it goes beside it as
  ``<name>.new``;
- ``systemctl daemon-reload``, only against the host it runs on (never for ``--root``).

Every step prints what it does (``--dry-run``: what it would do, changing nothing), and a
second run changes nothing that the first one made.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
UNIT_NAME = "kubelet-companion.service"
UNIT_SOURCE = REPO / "systemd" / UNIT_NAME
VENV = Path("opt/kubelet-companion")
UNIT = Path("etc/systemd/system") / UNIT_NAME
WANTS = Path("etc/systemd/system/multi-user.target.wants") / UNIT_NAME
CONFIG_DIR = Path("etc/kubelet-companion")
CONFIG_FILES = {
    "agent.yaml": REPO / "systemd" / "agent.yaml",
    "env.example": REPO / "systemd" / "env.example",
}
STATE_DIR = Path("var/lib/kubelet-companion")
LOGIND_DROPIN = Path("etc/systemd/logind.conf.d/99-zz-kubelet-companion.conf")
DROPIN_MARKER = "# Written by kubelet-companion"
"""The first line of the drop-in the agent writes (agent/logind/dropin.py)."""


class UsageError(Exception):
    """Bad arguments: reported in one line, exit 2."""


class StepFailed(Exception):
    """A command failed: reported, exit 1."""


@dataclass(frozen=True)
class Target:
    root: Path
    dry_run: bool

    @property
    def staging(self) -> bool:
        return self.root != Path("/")

    def path(self, relative: Path) -> Path:
        return self.root / relative

    def show(self, relative: Path) -> str:
        """How a path is named in the output: as on the node, plus where it is staged."""
        host = f"/{relative}"
        return f"{host} (in {self.root})" if self.staging else host

    def say(self, done: str, would: str | None = None) -> None:
        print(f"would {would}" if self.dry_run and would else done)

    def run(self, argv: Sequence[str], what: str) -> None:
        """Run ``argv`` (an argument list, never a shell string) or print it in a dry run."""
        command = shlex.join(argv)
        if self.dry_run:
            print(f"would {what}: {command}")
            return
        print(f"{what}: {command}")
        result = subprocess.run(list(argv), check=False)
        if result.returncode != 0:
            raise StepFailed(f"{what} failed (exit {result.returncode}): {command}")


def _write_atomically(path: Path, data: bytes, mode: int) -> None:
    """Write ``path`` via a temporary file in its directory and a rename (never half-written)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        Path(temporary).chmod(mode)
        Path(temporary).replace(path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _systemd_running() -> bool:
    """Whether this host booted with systemd (sd_booted's test)."""
    return Path("/run/systemd/system").is_dir()


def _daemon_reload(target: Target) -> None:
    if target.staging:
        print(
            f"skip systemctl daemon-reload: --root {target.root} is a staging tree, not this "
            "host's systemd (run it on the node the tree is for)"
        )
    elif not _systemd_running():
        print("skip systemctl daemon-reload: systemd is not running on this host")
    else:
        target.run(["systemctl", "daemon-reload"], "reload systemd")


# -- install ---------------------------------------------------------------------------


def _venv(target: Target, python: str) -> None:
    venv = target.path(VENV)
    if (venv / "bin" / "python").exists():
        print(f"ok: virtualenv {target.show(VENV)} exists")
        return
    target.run([python, "-m", "venv", str(venv)], f"create the virtualenv {target.show(VENV)}")


def _package(target: Target, source: Path, pip_args: Sequence[str]) -> None:
    pip = [str(target.path(VENV) / "bin" / "python"), "-m", "pip", "install"]
    quiet = ["--disable-pip-version-check", "--no-input"]
    target.run(
        [*pip, *quiet, *pip_args, str(source)],
        f"install kubelet-companion ({source}) into the venv",
    )


def _install_file(target: Target, relative: Path, data: bytes, *, mode: int) -> None:
    """Ours: written when missing or different, else left alone."""
    path = target.path(relative)
    if path.exists() and path.read_bytes() == data:
        print(f"ok: {target.show(relative)} is up to date")
        return
    verb = "update" if path.exists() else "install"
    target.say(f"{verb} {target.show(relative)}", f"{verb} {target.show(relative)}")
    if not target.dry_run:
        _write_atomically(path, data, mode)


def _install_config(target: Target, relative: Path, data: bytes) -> None:
    """The operator's once there: installed when absent; ours goes to ``.new`` beside it."""
    path = target.path(relative)
    if not path.exists():
        target.say(f"install {target.show(relative)}", f"install {target.show(relative)}")
        if not target.dry_run:
            _write_atomically(path, data, 0o644)
        return
    if path.read_bytes() == data:
        print(f"ok: {target.show(relative)} is up to date")
        return
    new = relative.with_name(relative.name + ".new")
    kept = f"keep {target.show(relative)} (edited here)"
    if target.path(new).exists() and target.path(new).read_bytes() == data:
        print(f"{kept}; ours is already in {target.show(new)}")
        return
    target.say(
        f"{kept}; ours goes to {target.show(new)} to compare",
        f"{kept} and put ours in {target.show(new)}",
    )
    if not target.dry_run:
        _write_atomically(target.path(new), data, 0o644)


def install(target: Target, *, source: Path, python: str, pip_args: Sequence[str]) -> None:
    _venv(target, python)
    _package(target, source, pip_args)
    _install_file(target, UNIT, UNIT_SOURCE.read_bytes(), mode=0o644)
    for name, template in CONFIG_FILES.items():
        _install_config(target, CONFIG_DIR / name, template.read_bytes())
    _daemon_reload(target)
    print(
        "next: to join the cluster, put the agent's kubeconfig in "
        "/etc/kubelet-companion/kubeconfig and its path in /etc/kubelet-companion/env "
        "(see env.example; without it the agent runs node-only), then "
        f"systemctl enable --now {UNIT_NAME} (after an upgrade: systemctl restart {UNIT_NAME})"
    )


# -- uninstall -------------------------------------------------------------------------


def _stop(target: Target) -> None:
    if not target.staging and _systemd_running() and target.path(UNIT).exists():
        target.run(["systemctl", "disable", "--now", UNIT_NAME], f"stop and disable {UNIT_NAME}")
        return
    wants = target.path(WANTS)
    if wants.is_symlink() or wants.exists():
        target.say(f"remove {target.show(WANTS)}", f"remove {target.show(WANTS)}")
        if not target.dry_run:
            wants.unlink()


def _remove_file(target: Target, relative: Path, *, marker: str | None = None) -> None:
    path = target.path(relative)
    if not path.exists():
        print(f"ok: {target.show(relative)} is not there")
        return
    if marker is not None and not path.read_text(errors="replace").startswith(marker):
        print(f"keep {target.show(relative)}: not written by kubelet-companion")
        return
    target.say(f"remove {target.show(relative)}", f"remove {target.show(relative)}")
    if not target.dry_run:
        path.unlink()


def _remove_tree(target: Target, relative: Path, *, must_hold: str | None = None) -> None:
    path = target.path(relative)
    if not path.exists():
        print(f"ok: {target.show(relative)} is not there")
        return
    if must_hold is not None and not (path / must_hold).exists():
        print(f"keep {target.show(relative)}: it has no {must_hold}, so it is not our venv")
        return
    target.say(f"remove {target.show(relative)}", f"remove {target.show(relative)}")
    if not target.dry_run:
        shutil.rmtree(path)


def uninstall(target: Target, *, purge: bool) -> None:
    _stop(target)
    _remove_file(target, UNIT)
    _daemon_reload(target)
    _remove_tree(target, VENV, must_hold="pyvenv.cfg")
    _remove_file(target, LOGIND_DROPIN, marker=DROPIN_MARKER)
    for relative, what in ((CONFIG_DIR, "config and credentials"), (STATE_DIR, "state")):
        if purge:
            _remove_tree(target, relative)
        elif target.path(relative).exists():
            print(f"keep {target.show(relative)} (the {what}; --purge removes it)")


# -- command line ----------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="systemd_install.py",
        description="Install (or remove) the kubelet-companion node agent as a systemd unit.",
    )
    parser.add_argument("action", choices=["install", "uninstall"])
    parser.add_argument("--dry-run", action="store_true", help="print each step, change nothing")
    parser.add_argument(
        "--root",
        default="/",
        help="install into this staging tree instead of the host (no systemctl calls then)",
    )
    parser.add_argument("--wheel", help="install this wheel instead of building the checkout")
    parser.add_argument(
        "--python", default=sys.executable, help="the Python 3.11+ the venv is made from"
    )
    parser.add_argument(
        "--pip-arg",
        action="append",
        default=[],
        metavar="ARG",
        help="an extra pip install argument, e.g. --pip-arg=--no-index (repeatable)",
    )
    parser.add_argument(
        "--purge", action="store_true", help="uninstall: also remove the config and state"
    )
    return parser


def _target(args: argparse.Namespace) -> Target:
    root = Path(args.root).absolute()
    if root.exists() and not root.is_dir():
        raise UsageError(f"--root {args.root}: not a directory")
    if root == Path("/") and os.geteuid() != 0 and not args.dry_run:
        raise UsageError("installing on this host needs root (or --root DIR, or --dry-run)")
    return Target(root=root, dry_run=args.dry_run)


def _source(args: argparse.Namespace) -> Path:
    if args.wheel is None:
        return REPO
    wheel = Path(args.wheel).absolute()
    if wheel.suffix != ".whl" or not wheel.is_file():
        raise UsageError(f"--wheel {args.wheel}: not a wheel file")
    return wheel


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        target = _target(args)
        if target.dry_run:
            print("dry run: nothing is changed")
        if target.staging:
            print(f"staging tree {target.root}: no systemctl calls against this host")
        if args.action == "install":
            install(target, source=_source(args), python=args.python, pip_args=args.pip_arg)
        else:
            uninstall(target, purge=args.purge)
    except UsageError as error:
        print(f"{args.action}-systemd: error: {error}", file=sys.stderr)
        return 2
    except (StepFailed, OSError) as error:
        print(f"{args.action}-systemd: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
