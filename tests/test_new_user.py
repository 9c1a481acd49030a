"""What a new user meets going through the README and getting-started page, command by command, where
features meet (the trial run of 2026-12-07): each test is one thing that went wrong there."""

from conftest import git_subjects, run_cli


def test_superseding_again_writes_nothing_so_undo_takes_back_the_supersession(vault):
    run_cli("remember", "Use flake8 for linting.", "--id", "flake8")
    run_cli("remember", "Use ruff for linting and formatting.", "--id", "ruff")
    run_cli("supersede", "flake8", "ruff")
    before = git_subjects(vault.root)
    again = run_cli("supersede", "flake8", "ruff", check=False)
    assert (again.returncode, again.stderr.strip()) == (1, "Error: flake8 is already superseded by ruff; nothing written")
    assert git_subjects(vault.root) == before  # no empty commit for `undo` to take back instead
    run_cli("undo")
    assert run_cli("list").stdout.startswith("flake8")
