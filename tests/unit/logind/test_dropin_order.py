"""Who has the last word on InhibitDelayMaxSec among logind's drop-ins (pure, and the scan)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agent.config.shutdown import ShutdownOptions
from agent.logind.dropin import DROPIN_DIRS, dropin_rank, dropin_text, scan_dropins
from agent.logind.dropin_order import (
    DropInFile,
    Override,
    inhibit_delay_setting,
    overriding_dropins,
)

ETC, RUN, USR_LOCAL, USR = range(4)
DEFAULT_NAME = Path(ShutdownOptions().logind_drop_in_path).name
OURS = DropInFile(DEFAULT_NAME, ETC, f"/etc/{DEFAULT_NAME}", dropin_text(35))


def dropin(
    name: str, rank: int = ETC, text: str | None = "[Login]\nInhibitDelayMaxSec=5\n"
) -> DropInFile:
    return DropInFile(name, rank, f"{DROPIN_DIRS[rank]}/{name}", text)


@pytest.mark.parametrize(
    ("others", "expected"),
    [
        pytest.param([dropin("99-kubelet.conf")], [], id="kubelets-own-file-sorts-before-ours"),
        pytest.param([dropin("99-kubelet-custom.conf")], [], id="kubelet-prefixed-sorts-before"),
        pytest.param(
            [dropin("99-zzz.conf")],
            [Override("/etc/systemd/logind.conf.d/99-zzz.conf", "5", "later")],
            id="a-later-name-wins",
        ),
        pytest.param(
            [dropin("99-zzz.conf", USR)],
            [Override("/usr/lib/systemd/logind.conf.d/99-zzz.conf", "5", "later")],
            id="later-name-in-a-lower-directory-still-wins",
        ),
        pytest.param(
            [dropin("99-zzz.conf", USR), dropin("99-zzz.conf", ETC, None)],
            [],
            id="masked-by-dev-null",
        ),
        pytest.param(
            [dropin("99-zzz.conf", text="[Login]\nKillUserProcesses=no\n")], [], id="other-key"
        ),
        pytest.param(
            [dropin("99-zzz.conf", text="[Other]\nInhibitDelayMaxSec=5\n")], [], id="other-section"
        ),
        pytest.param(
            [
                dropin(
                    "99-zzz.conf", text="[Login]\n# InhibitDelayMaxSec=5\n; InhibitDelayMaxSec=5\n"
                )
            ],
            [],
            id="commented-out",
        ),
        pytest.param(
            [dropin("99-zzz.conf", text="[Login]\nInhibitDelayMaxSec=\n")],
            [Override("/etc/systemd/logind.conf.d/99-zzz.conf", "", "later")],
            id="empty-value-resets-to-the-default",
        ),
        pytest.param(
            [
                dropin(
                    "99-zzz.conf", text="[Login]\n InhibitDelayMaxSec = 9s\nInhibitDelayMaxSec=7\n"
                )
            ],
            [Override("/etc/systemd/logind.conf.d/99-zzz.conf", "7", "later")],
            id="last-assignment-counts",
        ),
        pytest.param([OURS], [], id="only-ours"),
        pytest.param(
            [dropin("99-zzz.conf", text="# kept by hand\n\n[Login]\n\nInhibitDelayMaxSec=5\n")],
            [Override("/etc/systemd/logind.conf.d/99-zzz.conf", "5", "later")],
            id="comments-and-blank-lines-before-the-key",
        ),
    ],
)
def test_who_overrides_our_dropin(others: list[DropInFile], expected: list[Override]) -> None:
    """Files are merged by name (first directory wins) and applied by name; later ones win."""
    assert overriding_dropins(OURS, [OURS, *others]) == expected


def test_the_default_name_sorts_after_every_kubelet_file() -> None:
    """Our default drop-in is applied after kubelet's 99-kubelet.conf and 99-kubelet-*.conf."""
    for kubelet in ("99-kubelet.conf", "99-kubelet-companion.conf", "99-kubelet-~.conf"):
        assert kubelet.encode() < DEFAULT_NAME.encode()


def test_the_old_default_name_lost_to_kubelets_file() -> None:
    """Why the name changed: '-' sorts before '.', so 99-kubelet.conf overrode us."""
    old = DropInFile("99-kubelet-companion.conf", ETC, "/etc/old", dropin_text(35))
    (override,) = overriding_dropins(old, [old, dropin("99-kubelet.conf")])
    assert override.how == "later"


@pytest.mark.parametrize(
    ("text", "value"),
    [pytest.param("[Login]\n", None, id="without-the-key"), pytest.param(None, None, id="masked")],
)
def test_a_same_named_file_read_first_hides_ours(text: str | None, value: str | None) -> None:
    """Ours in /run is hidden by a same-named file in /etc, key or not."""
    ours = DropInFile(DEFAULT_NAME, RUN, f"/run/{DEFAULT_NAME}", dropin_text(35))
    hider = dropin(DEFAULT_NAME, ETC, text)
    assert overriding_dropins(ours, [ours, hider]) == [Override(hider.path, value, "masks")]


def test_a_hiding_file_reports_the_value_logind_uses() -> None:
    """The hiding file's own InhibitDelayMaxSec is what the warning shows."""
    ours = DropInFile(DEFAULT_NAME, RUN, f"/run/{DEFAULT_NAME}", dropin_text(35))
    hider = dropin(DEFAULT_NAME, ETC)
    assert overriding_dropins(ours, [ours, hider]) == [Override(hider.path, "5", "masks")]


def test_before_ours_is_written_only_later_files_count() -> None:
    """Our drop-in not written yet (the delay was long enough): later files still count."""
    later = dropin("99-zzz.conf")
    assert overriding_dropins(OURS, [later]) == [Override(later.path, "5", "later")]


@pytest.mark.parametrize(
    ("directory", "rank"),
    [
        *(pytest.param(path, index, id=path) for index, path in enumerate(DROPIN_DIRS)),
        pytest.param("/opt/elsewhere", ETC, id="elsewhere"),
    ],
)
def test_dropin_rank_follows_loginds_directory_order(directory: str, rank: int) -> None:
    """/etc, /run, /usr/local/lib, /usr/lib in that order; anywhere else counts as /etc."""
    assert dropin_rank(Path(directory) / DEFAULT_NAME) == rank


def test_scan_reads_etc_when_ours_lives_elsewhere(tmp_path: Path) -> None:
    """With our drop-in in /run, a later file in the host's /etc is still found."""
    etc_dir = tmp_path / "etc" / "systemd" / "logind.conf.d"
    run_dir = tmp_path / "run" / "systemd" / "logind.conf.d"
    for directory in (etc_dir, run_dir):
        directory.mkdir(parents=True)
    ours = run_dir / DEFAULT_NAME
    ours.write_text(dropin_text(35))
    (etc_dir / "99-zzz.conf").write_text("[Login]\nInhibitDelayMaxSec=5\n")
    mine, files = scan_dropins(ours, etc=tmp_path / "etc", run=tmp_path / "run")
    assert mine.path == str(ours)
    assert [o.path for o in overriding_dropins(mine, files)] == [str(etc_dir / "99-zzz.conf")]


def test_describe_names_the_file_and_its_value() -> None:
    """The warning text names the file and what it sets."""
    later = Override("/etc/systemd/logind.conf.d/99-zzz.conf", "5", "later")
    assert later.describe() == (
        "/etc/systemd/logind.conf.d/99-zzz.conf sets InhibitDelayMaxSec=5 after ours"
    )
    assert "logind's default" in Override("/x.conf", "", "later").describe()
    assert "hides ours" in Override("/x.conf", None, "masks").describe()


def test_setting_is_read_from_the_login_section_only() -> None:
    """Only [Login] InhibitDelayMaxSec counts; no text means no setting."""
    assert inhibit_delay_setting("[Login]\nInhibitDelayMaxSec=30\n") == "30"
    assert inhibit_delay_setting("InhibitDelayMaxSec=30\n") is None
    assert inhibit_delay_setting(None) is None


def test_scan_reads_every_directory_and_skips_masks_and_non_conf(tmp_path: Path) -> None:
    """The scan finds *.conf in our directory and the host's /etc and /run ones, masks as None."""
    etc_dir = tmp_path / "etc" / "systemd" / "logind.conf.d"
    run_dir = tmp_path / "run" / "systemd" / "logind.conf.d"
    for directory in (etc_dir, run_dir):
        directory.mkdir(parents=True)
    ours = etc_dir / DEFAULT_NAME
    ours.write_text(dropin_text(35))
    (etc_dir / "README").write_text("not a drop-in")
    (run_dir / "99-zzz.conf").write_text("[Login]\nInhibitDelayMaxSec=5\n")
    (etc_dir / "99-zzz.conf").symlink_to(os.devnull)
    mine, files = scan_dropins(ours, etc=tmp_path / "etc", run=tmp_path / "run")
    assert mine.text == dropin_text(35)
    found = {(file.name, file.rank, file.text is None) for file in files}
    assert (DEFAULT_NAME, ETC, False) in found
    assert ("99-zzz.conf", ETC, True) in found
    assert ("99-zzz.conf", RUN, False) in found
    assert "README" not in {file.name for file in files}
    assert overriding_dropins(mine, files) == []  # /etc's mask hides /run's file
    (etc_dir / "99-zzz.conf").unlink()
    mine, files = scan_dropins(ours, etc=tmp_path / "etc", run=tmp_path / "run")
    assert [o.path for o in overriding_dropins(mine, files)] == [str(run_dir / "99-zzz.conf")]
