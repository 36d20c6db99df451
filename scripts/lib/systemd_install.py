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
- ``systemctl daemon-reload``, only against the host it runs on (never for ``--root``);
- with ``--token-file``: ``/etc/kubelet-companion/kubeconfig`` (mode 0600) for the agent's
  ServiceAccount, and ``env`` pointing the unit at it (only when absent).

Why the token must be bound to the Node: the admission policy in daemonset/base denies every
write of the agent's account whose credentials name no node, and every write about another
node's objects. A DaemonSet pod's token names its node; on a systemd node the equivalent is a
token bound to the Node object (``kubectl create token kubelet-companion-agent -n
kubelet-companion --bound-object-kind Node --bound-object-name NODE``, Kubernetes and kubectl
1.31+), which carries the same claim and dies with the Node. So a token that names no node, a
pod-bound one (it dies with its pod), another account's, or an expired one is refused here
with the reason, rather than installed to fail every write. The token is decoded, not
verified (the API server verifies it), and never printed. It expires: running the script
again with ``--credentials-only`` and a new token rewrites the kubeconfig (keeping the server
and CA) and restarts the unit if it runs, since the agent reads its kubeconfig at start.

Every step prints what it does (``--dry-run``: what it would do, changing nothing), and a
second run changes nothing that the first one made.
"""

from __future__ import annotations

import argparse
import base64
import binascii
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.parse
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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
KUBECONFIG = CONFIG_DIR / "kubeconfig"
ENV = CONFIG_DIR / "env"
AGENT_SUBJECT = "system:serviceaccount:kubelet-companion:kubelet-companion-agent"
NODE_BOUND_COMMAND = (
    "kubectl create token kubelet-companion-agent -n kubelet-companion "
    "--bound-object-kind Node --bound-object-name {node} --duration 720h"
)
"""How to make the token (kubectl 1.31+; the API server may cap the duration)."""
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


# -- credentials: a token bound to this node's Node object --------------------------------


@dataclass(frozen=True)
class Credentials:
    """What the agent's kubeconfig holds: a Node-bound token and the API server to send it to."""

    token: str
    node: str
    expires: float | None
    server: str
    certificate_authority_data: str | None
    """Base64 of the CA bundle (PEM); ``None``: the system's trust store."""

    def describe(self) -> str:
        expiry = "no expiry"
        if self.expires is not None:
            days = (self.expires - time.time()) / 86400
            stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.expires))
            expiry = f"expires {stamp} (in {days:.0f} days)"
        return f"token of kubelet-companion-agent bound to Node {self.node}, {expiry}"


def _claims(token: str) -> dict[str, Any]:
    """The JWT's payload, unverified (the API server verifies it)."""
    parts = token.split(".")
    payload = None
    if len(parts) == 3:
        try:
            payload = json.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
        except (binascii.Error, ValueError):
            payload = None
    if not isinstance(payload, dict):
        raise UsageError("--token-file: not a service-account token (a JWT)")
    return payload


def _node_bound(token: str, node: str | None) -> tuple[str, float | None]:
    """The Node the agent's ``token`` is bound to, and its expiry; ``UsageError`` with the
    reason for any token the admission policy would refuse."""
    claims = _claims(token)
    subject = str(claims.get("sub") or "")
    if subject != AGENT_SUBJECT:
        raise UsageError(f"--token-file: a token of {subject or '?'}, not of {AGENT_SUBJECT}")
    bound = _mapping(claims.get("kubernetes.io"))
    pod = _mapping(bound.get("pod"))
    name = str(_mapping(bound.get("node")).get("name") or "")
    command = NODE_BOUND_COMMAND.format(node=node or name or "NODE")
    if pod:
        raise UsageError(
            f"--token-file: the token is bound to pod {pod.get('name')}, so it stops working "
            f"when that pod goes; bind one to the Node: {command}"
        )
    if not name:
        raise UsageError(
            "--token-file: the token is bound to no Node, so the cluster's admission policy "
            "would deny every write of the agent (reads would still work); create one bound "
            f"to this node's Node (Kubernetes and kubectl 1.31+): {command}"
        )
    if node is not None and name != node:
        raise UsageError(f"--token-file: the token is bound to Node {name}, not {node}")
    expires = claims.get("exp")
    expiry = float(expires) if isinstance(expires, int | float) else None
    if expiry is not None and expiry <= time.time():
        raise UsageError(f"--token-file: the token expired; create a new one: {command}")
    return name, expiry


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _our_kubeconfig(target: Target) -> dict[str, Any] | None:
    """The cluster entry of the kubeconfig this script wrote, if that is what is there."""
    path = target.path(KUBECONFIG)
    try:
        cluster = json.loads(path.read_text())["clusters"][0]["cluster"]
    except (OSError, ValueError, KeyError, IndexError, TypeError):
        return None
    return cluster if isinstance(cluster, dict) and cluster.get("server") else None


def _read_token(source: str) -> str:
    try:
        token = sys.stdin.read() if source == "-" else Path(source).read_text()
    except OSError as error:
        raise UsageError(f"--token-file {source}: {error.strerror or error}") from None
    token = token.strip()
    if not token:
        raise UsageError(f"--token-file {source}: empty")
    return token


def read_credentials(args: argparse.Namespace, target: Target) -> Credentials | None:
    """The credentials the arguments describe (``None`` without ``--token-file``)."""
    if args.token_file is None:
        if args.credentials_only or args.server or args.certificate_authority:
            raise UsageError(
                "--server, --certificate-authority and --credentials-only need --token-file"
            )
        return None
    token = _read_token(args.token_file)
    node, expires = _node_bound(token, args.node)
    kept = _our_kubeconfig(target)
    server = args.server or (kept or {}).get("server")
    if not server:
        raise UsageError("--server URL is needed (there is no kubeconfig of ours to keep it from)")
    url = urllib.parse.urlsplit(server)
    if url.scheme not in ("https", "http") or not url.netloc:
        raise UsageError(f"--server {server}: not an http(s) URL")
    authority = None if args.server else (kept or {}).get("certificate-authority-data")
    if args.certificate_authority:
        try:
            pem = Path(args.certificate_authority).read_bytes()
        except OSError as error:
            raise UsageError(
                f"--certificate-authority {args.certificate_authority}: {error.strerror or error}"
            ) from None
        if b"-----BEGIN CERTIFICATE-----" not in pem:
            raise UsageError(
                f"--certificate-authority {args.certificate_authority}: no PEM certificate in it"
            )
        authority = base64.b64encode(pem).decode()
    return Credentials(token, node, expires, server, authority)


def _kubeconfig(credentials: Credentials) -> bytes:
    """The agent's kubeconfig (JSON, which is YAML too: the standard library writes it)."""
    cluster: dict[str, Any] = {"server": credentials.server}
    if credentials.certificate_authority_data:
        cluster["certificate-authority-data"] = credentials.certificate_authority_data
    name = "kubelet-companion-agent"
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "kubernetes", "cluster": cluster}],
        "users": [{"name": name, "user": {"token": credentials.token}}],
        "contexts": [
            {
                "name": name,
                "context": {
                    "cluster": "kubernetes",
                    "user": name,
                    "namespace": "kubelet-companion",
                },
            }
        ],
        "current-context": name,
    }
    return (json.dumps(config, indent=2) + "\n").encode()


def _env_file(node: str) -> bytes:
    """env.example with NODE_NAME set to the token's Node: the agent must run as that node."""
    lines = [
        f"NODE_NAME={node}" if line == "#NODE_NAME=" else line
        for line in CONFIG_FILES["env.example"].read_text().splitlines()
    ]
    return ("\n".join(lines) + "\n").encode()


def _env_node(text: str) -> str | None:
    """The NODE_NAME an env file sets (the last assignment, as systemd reads it)."""
    node = None
    for line in text.splitlines():
        name, sep, value = line.strip().partition("=")
        if sep and name.strip() == "NODE_NAME" and not name.startswith("#"):
            node = value.strip()
    return node


def install_credentials(target: Target, credentials: Credentials) -> None:
    """The kubeconfig (0600, replaced when it differs), env when absent, and a restart of a
    running unit (the agent reads its kubeconfig at start)."""
    print(f"credentials: {credentials.describe()}; server {credentials.server}")
    if credentials.server.startswith("http://"):
        print("warning: --server is plain http: the token crosses the network unencrypted")
    changed = not (
        target.path(KUBECONFIG).exists()
        and target.path(KUBECONFIG).read_bytes() == _kubeconfig(credentials)
    )
    _install_file(target, KUBECONFIG, _kubeconfig(credentials), mode=0o600)
    kubeconfig = target.path(KUBECONFIG)
    if kubeconfig.exists() and kubeconfig.stat().st_mode & 0o077:
        what = f"make {target.show(KUBECONFIG)} mode 0600 (it holds the token)"
        target.say(what, what)
        if not target.dry_run:
            kubeconfig.chmod(0o600)
    env = target.path(ENV)
    if not env.exists():
        what = f"install {target.show(ENV)} with NODE_NAME={credentials.node}"
        target.say(what, what)
        if not target.dry_run:
            _write_atomically(env, _env_file(credentials.node), 0o644)
    else:
        set_node = _env_node(env.read_text(errors="replace"))
        print(f"keep {target.show(ENV)} (yours)")
        if set_node != credentials.node:
            print(
                f"note: {target.show(ENV)} sets NODE_NAME={set_node or '(unset: the host name)'}"
                f" but the token is bound to Node {credentials.node}: the agent must run as "
                f"that node, or the admission policy denies its writes; set NODE_NAME="
                f"{credentials.node} there"
            )
    if changed:
        _restart(target)
    print(
        "rotate before it expires: create a new token and run scripts/install-systemd "
        "--credentials-only --token-file FILE (or - for stdin; the server and CA are kept)"
    )


def _restart(target: Target) -> None:
    if target.staging:
        print(f"skip systemctl try-restart: --root {target.root} is a staging tree")
    elif not _systemd_running():
        print("skip systemctl try-restart: systemd is not running on this host")
    else:
        target.run(
            ["systemctl", "try-restart", UNIT_NAME],
            "restart the agent if it runs (it reads its kubeconfig at start)",
        )


def install(
    target: Target,
    *,
    source: Path,
    python: str,
    pip_args: Sequence[str],
    credentials: Credentials | None = None,
    credentials_only: bool = False,
) -> None:
    if not credentials_only:
        _venv(target, python)
        _package(target, source, pip_args)
        _install_file(target, UNIT, UNIT_SOURCE.read_bytes(), mode=0o644)
        for name, template in CONFIG_FILES.items():
            _install_config(target, CONFIG_DIR / name, template.read_bytes())
        _daemon_reload(target)
    if credentials is not None:
        install_credentials(target, credentials)
        if not credentials_only:
            print(f"next: systemctl enable --now {UNIT_NAME}")
        return
    print(
        "next: to join the cluster, create a token bound to this node's Node ("
        f"{NODE_BOUND_COMMAND.format(node='NODE')}) and run this again with --server URL "
        "--certificate-authority FILE --token-file FILE (see docs/install.md; without it the agent "
        f"runs node-only), then systemctl enable --now {UNIT_NAME} (after an upgrade: "
        f"systemctl restart {UNIT_NAME})"
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
    joining = parser.add_argument_group(
        "joining the cluster (install)",
        "write /etc/kubelet-companion/kubeconfig from a token bound to this node's Node: "
        + NODE_BOUND_COMMAND.format(node="NODE"),
    )
    joining.add_argument(
        "--token-file", metavar="FILE", help="the Node-bound token (- reads it from stdin)"
    )
    joining.add_argument(
        "--server", metavar="URL", help="the API server (kept from our kubeconfig if omitted)"
    )
    joining.add_argument(
        "--certificate-authority",
        metavar="FILE",
        help="the API server's CA bundle, PEM (default: kept with the server, else the "
        "system's trust store)",
    )
    joining.add_argument("--node", help="refuse a token bound to any other Node")
    joining.add_argument(
        "--credentials-only",
        action="store_true",
        help="only the kubeconfig (rotation): no venv, package, unit or config changes",
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
            credentials = read_credentials(args, target)
            install(
                target,
                source=REPO if args.credentials_only else _source(args),
                python=args.python,
                pip_args=args.pip_arg,
                credentials=credentials,
                credentials_only=args.credentials_only,
            )
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
