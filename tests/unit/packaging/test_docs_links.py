"""The documentation holds together: every relative link in the repository's Markdown files
reaches a file that exists and, with an ``#anchor``, a heading of that file (GitHub's slugs);
the README stays a short front door onto ``docs/``."""

from __future__ import annotations

import re
import shutil
import subprocess
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote

from tests.harness.repository import REPO

README = REPO / "README.md"
SKIPPED_DIRS = {".venv", "build", "dist", "node_modules", "__pycache__"}
SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")  # http:, https:, mailto:, ...
FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
ATX_HEADING = re.compile(r"^ {0,3}#{1,6}(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
HTML_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
CODE_SPAN = re.compile(
    r"(`+)((?:(?!\n[ \t]*\n).)+?)(?<!`)\1(?!`)", re.DOTALL
)  # not past a blank line
INLINE_LINK = re.compile(
    r"!?\[((?:[^\[\]]|\[[^\[\]]*\])*)\]\(\s*(<[^>]*>|[^)\s]*)(?:\s+(?:\"[^\"]*\"|'[^']*'))?\s*\)"
)
REFERENCE_DEFINITION = re.compile(r"^ {0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)", re.MULTILINE)
HTML_ANCHOR = re.compile(r"<a\s[^>]*\b(?:name|id)=\"([^\"]+)\"", re.IGNORECASE)
LINE_ANCHOR = re.compile(r"^L\d+(?:-L\d+)?$")  # GitHub's anchors into a code file's lines


@dataclass(frozen=True)
class Link:
    source: Path
    line: int
    target: str

    def __str__(self) -> str:
        return f"{self.source.relative_to(REPO)}:{self.line}: ({self.target})"


def repository_files() -> set[Path]:
    """Every file GitHub would show: tracked or new, never ignored (walks the tree without git)."""
    git = shutil.which("git")
    if git and (REPO / ".git").exists():
        listed = subprocess.run(
            [git, "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=REPO, capture_output=True, check=True,
        ).stdout  # fmt: skip
        return {REPO / name for name in listed.decode().split("\0") if name}
    return {
        path
        for path in REPO.rglob("*")
        if path.is_file()
        and not any(
            part.startswith(".") or part in SKIPPED_DIRS or part.endswith(".egg-info")
            for part in path.relative_to(REPO).parts[:-1]
        )
    }


FILES = repository_files()
DIRECTORIES = {parent for path in FILES for parent in path.parents}
MARKDOWN = sorted(path for path in FILES if path.suffix == ".md" and path.exists())


def prose_lines(text: str) -> list[str]:
    """The lines outside fenced code blocks (a line inside one is blanked, keeping numbers)."""
    lines, fence = [], ""
    for line in text.splitlines():
        match = FENCE.match(line)
        if fence:
            if match and match.group(1)[0] == fence[0] and len(match.group(1)) >= len(fence):
                fence = ""
            lines.append("")
        elif match:
            fence = match.group(1)
            lines.append("")
        else:
            lines.append(line)
    return lines


def slug(heading: str) -> str:
    """GitHub's anchor for a heading's text: the rendered text lowercased, every character
    but letters, marks, digits, connector punctuation (``_``), spaces and ``-`` dropped,
    spaces turned into ``-``."""
    text = CODE_SPAN.sub(lambda m: m.group(2).strip(), heading)
    text = INLINE_LINK.sub(lambda m: m.group(1), text)
    text = re.sub(r"<[^>]+>", "", text)
    text = re.sub(r"(?<!\w)_(.+?)_(?!\w)", r"\1", text)  # _emphasis_, not snake_case
    text = text.strip().lower()
    kept = "".join(
        c
        for c in text
        if c in " -" or unicodedata.category(c)[0] in "LMN" or unicodedata.category(c) == "Pc"
    )
    return kept.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """The anchors of a Markdown file: its headings' slugs, a repeated one numbered ``-1``,
    ``-2``, ... (as github-slugger does), and explicit ``<a name|id="...">`` anchors."""
    text = path.read_text(encoding="utf-8")
    seen: dict[str, int] = {}
    found = set(HTML_ANCHOR.findall(text))
    for line in prose_lines(HTML_COMMENT.sub("", text)):
        match = ATX_HEADING.match(line)
        if not match:
            continue
        base = result = slug(match.group(1) or "")
        while result in seen:
            seen[base] += 1
            result = f"{base}-{seen[base]}"
        seen[result] = 0
        found.add(result)
    return found


def links(path: Path) -> list[Link]:
    """Every link target of a Markdown file outside code (inline links, images, reference
    definitions), a link's text free to wrap across lines."""
    text = HTML_COMMENT.sub(lambda m: "\n" * m.group(0).count("\n"), path.read_text("utf-8"))
    prose = "\n".join(prose_lines(text))
    prose = CODE_SPAN.sub(lambda m: re.sub(r"[^\n]", "x", m.group(0)), prose)
    found = [(m.start(2), m.group(2)) for m in INLINE_LINK.finditer(prose)]
    found += [(m.start(1), m.group(1)) for m in REFERENCE_DEFINITION.finditer(prose)]
    return [
        Link(path, prose.count("\n", 0, offset) + 1, target.strip("<>"))
        for offset, target in sorted(found)
    ]


def resolve(link: Link) -> Path:
    location = unquote(link.target.partition("#")[0])
    if location.startswith("/"):
        return (REPO / location.lstrip("/")).resolve()
    return (link.source.parent / location).resolve() if location else link.source


def anchor_problem(target: Path, anchor: str) -> str | None:
    if target.suffix == ".md":
        if anchor in anchors(target):
            return None
        return f"#{anchor} matches no heading of {target.relative_to(REPO)}"
    if LINE_ANCHOR.match(anchor):
        return None
    return f"#{anchor}: {target.relative_to(REPO)} is not a Markdown file"


def problem(link: Link) -> str | None:
    """Why a relative link is broken, or None when it is fine (or not relative)."""
    if not link.target:
        return "empty link"
    if SCHEME.match(link.target):
        return None
    target = resolve(link)
    if target != REPO and REPO not in target.parents:
        return "points outside the repository"
    if target not in FILES and target not in DIRECTORIES:
        return f"no file or directory {target.relative_to(REPO)} in the repository"
    anchor = link.target.partition("#")[2]
    return anchor_problem(target, anchor) if anchor else None


def test_every_relative_link_in_the_markdown_resolves() -> None:
    """Each relative link (and image, and reference definition) of each Markdown file in the
    repository reaches a file or directory of the repository, and its ``#anchor``, if any,
    is a heading of the Markdown file it names; failures name file, line, link and reason."""
    assert README in MARKDOWN
    assert len(MARKDOWN) > 5
    checked = [link for path in MARKDOWN for link in links(path)]
    broken = [f"{link}: {reason}" for link in checked if (reason := problem(link))]
    assert len(checked) > 50
    assert broken == [], "broken links:\n" + "\n".join(broken)


def test_slugs_follow_githubs_rules(tmp_path: Path) -> None:
    """The slugs the link check compares against are GitHub's: punctuation dropped except
    ``-`` and ``_``, code and link markup reduced to their text, repeats numbered."""
    assert slug("Permissions (RBAC) and what they leave open") == (
        "permissions-rbac-and-what-they-leave-open"
    )
    assert slug("Agent footprint (`scripts/benchmarks/footprint.py`)") == (
        "agent-footprint-scriptsbenchmarksfootprintpy"
    )
    assert slug("Offline plan: `descheduler plan`") == "offline-plan-descheduler-plan"
    assert slug("The [plan](plan.md) — snake_case, _emphasis_") == "the-plan--snake_case-emphasis"
    page = tmp_path / "page.md"
    page.write_text("# A\n\n## A\n\n```sh\n# not a heading\n```\n\n## A\n\n## A-1 b\n")
    assert anchors(page) == {"a", "a-1", "a-2", "a-1-b"}


def test_the_readme_is_a_front_door() -> None:
    """README.md stays at most 200 lines: its Quick start is exactly ``scripts/run`` and
    ``scripts/test`` (the command CI runs), it says where the dependency table is, and its
    map links every page under ``docs/``."""
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 200
    quick_start = text[text.index("## Quick start") :]
    block = quick_start.split("```sh\n", 1)[1].split("```", 1)[0]
    assert [line.split()[0] for line in block.splitlines()] == ["scripts/run", "scripts/test"]
    assert "exec scripts/test\n" in (REPO / ".ci" / "run").read_text(encoding="utf-8")
    dependencies = text[text.index("## Dependencies, and why") :]
    assert "(docs/dependencies.md)" in dependencies.split("\n## ", 1)[0]
    pages = {path.relative_to(REPO).as_posix() for path in (REPO / "docs").glob("*.md")}
    linked = {link.target.partition("#")[0] for link in links(README)}
    assert pages, "no docs/ pages"
    assert pages - linked == set(), "docs pages missing from the README's map"
