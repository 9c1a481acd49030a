"""The documentation site builds with every link and anchor checked, and its CLI reference is the one the
parsers make. (tests/test_readme.py runs the pages' worked examples.)"""

from __future__ import annotations

import os
import subprocess
import sys

from conftest import ROOT


def test_the_site_builds_strictly(tmp_path):
    """`mkdocs build --strict`, as `make docs`: a broken link or anchor, a page left out of the nav or a
    missing snippet file fails it."""
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                          cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert done.returncode == 0, done.stderr
    built = tmp_path / "site"
    assert (built / "cli" / "index.html").exists() and (built / "clients" / "codex" / "index.html").exists()
    changelog = (built / "changelog" / "index.html").read_text(encoding="utf-8")
    assert "Keep a Changelog" in changelog  # the snippet was included, not its marker


def test_the_cli_reference_is_made_from_the_parsers():
    from hafiza.cli.reference import page

    assert (ROOT / "docs" / "cli.md").read_text(encoding="utf-8") == page(), (
        "docs/cli.md is out of date: run `python -m hafiza.cli.reference > docs/cli.md` (or `make docs`)")


def test_every_command_and_option_is_in_the_cli_reference():
    from hafiza.cli.app import MODULE_OF, command

    text = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")

    def check(found, prog):
        assert f"## {prog}\n" in text or f"# {prog}\n" in text
        for names, _ in found.params:
            assert all(f"`{n}" in text for n in names if n.startswith("-")), (prog, names)
        for name, sub in found.subcommands.items():
            check(sub, f"{prog} {name}")

    for name in MODULE_OF:
        check(command(name), f"hafiza {name}")
