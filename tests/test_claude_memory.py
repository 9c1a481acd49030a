"""Claude Code's MEMORY.md load cliff in `hafiza doctor`, and `hafiza import claude-code`."""

import json
from pathlib import Path

from conftest import git_head, git_subjects, run_cli


def make_claude_memory(home: Path, entries: int = 230) -> Path:
    project = home / ".claude" / "projects" / "-work-shop-api"
    memory = project / "memory"
    memory.mkdir(parents=True)
    (project / "0a1b.jsonl").write_text(json.dumps({"type": "user", "cwd": "/work/shop-api",
                                                    "message": {"role": "user", "content": "hi"}}) + "\n")
    lines = ["# Memory index", "- [User role](user_role.md) — who the user is",
             "- [Testing feedback](feedback_testing.md) — how to test"]
    lines += [f"- Note {n}: the shop-api service keeps setting number {n} in config/app.toml" for n in range(entries)]
    (memory / "MEMORY.md").write_text("\n".join(lines) + "\n")
    (memory / "user_role.md").write_text("---\nname: User role\ndescription: who\ntype: user\n---\n"
                                         "The user is Deniz, a backend developer who prefers Go.\n")
    (memory / "feedback_testing.md").write_text("---\nname: Testing feedback\ntype: feedback\n---\n"
                                                "Run `go test ./...` before every commit; never skip the race detector.\n")
    return memory


def test_doctor_lists_exactly_the_lines_claude_code_never_loads(vault, tmp_path):
    make_claude_memory(tmp_path / "home", entries=230)
    out = run_cli("doctor", "--json", check=False).stdout
    check = next(c for c in json.loads(out) if c["name"] == "claude-code memory")
    assert check["level"] == "warn"
    dropped = [line.strip() for line in check["details"] if line.strip()[:3].rstrip(":").isdigit()]
    # 233 lines: the heading, two links and 230 notes; lines 201..233 are past the 200-line limit.
    assert len(dropped) == 33
    assert dropped[0].startswith("201: - Note 197:") and dropped[-1].startswith("233: - Note 229:")


def test_doctor_applies_the_byte_limit_too(vault, tmp_path):
    memory = make_claude_memory(tmp_path / "home", entries=0)
    (memory / "MEMORY.md").write_text("".join(f"- {'x' * 298} {n}\n" for n in range(120)))  # ~36 KB, 120 lines
    check = next(c for c in json.loads(run_cli("doctor", "--json", check=False).stdout)
                 if c["name"] == "claude-code memory")
    numbers = [int(line.strip().split(":")[0]) for line in check["details"] if line.strip()[:1].isdigit()]
    assert numbers[0] == 83 and numbers[-1] == 120  # 82 lines of 302 bytes fit in 25,000


def test_import_claude_code_keeps_everything_once(vault, tmp_path):
    make_claude_memory(tmp_path / "home", entries=230)
    out = json.loads(run_cli("import", "claude-code", "--json").stdout)
    assert len(out["imported"]) == 232  # 230 index lines + 2 topic files; nothing past the cliff is lost
    assert git_subjects(vault.root)[0] == "hafiza: import 232 memories" and out["commit"] == git_head(vault.root)
    again = json.loads(run_cli("import", "claude-code", "--json").stdout)
    assert again == {"imported": [], "already_imported": 232, "skipped": [], "commit": None}
    assert git_subjects(vault.root)[0] == "hafiza: import 232 memories"  # no second commit
    shown = json.loads(run_cli("show", "user-role", "--json").stdout)
    assert shown["type"] == "identity" and shown["scope"] == "project:shop-api"
    assert shown["source"] == "claude-code:-work-shop-api/user_role.md"
    assert json.loads(run_cli("show", "testing-feedback", "--json").stdout)["type"] == "rule"
    hits = json.loads(run_cli("search", "setting number 229", "--json", "--all-scopes").stdout)
    assert hits[0]["title"].startswith("Note 229")


def test_import_claude_code_without_memory_is_a_clear_error(vault):
    proc = run_cli("import", "claude-code", check=False)
    assert proc.returncode != 0 and proc.stderr.startswith("Error: no Claude Code memory found")


def test_without_a_transcript_the_project_comes_from_the_folder_or_the_user(vault, tmp_path):
    memory = make_claude_memory(tmp_path / "home", entries=1)
    (memory.parent / "0a1b.jsonl").unlink()
    refused = run_cli("import", "claude-code", check=False)
    assert refused.returncode == 1 and "--scope project:<name>" in refused.stderr and not vault.load_all()[0]
    real = tmp_path / "src" / "my-shop"
    real.mkdir(parents=True)
    slug = str(real).replace("/", "-")
    memory.parent.rename(memory.parent.parent / slug)
    run_cli("import", "claude-code")
    assert {m.scope for m in vault.load_all()[0]} == {"project:my-shop"}


def test_import_claude_code_dry_run_says_what_it_would_import_and_writes_nothing(vault, tmp_path):
    """New-user trial: `import claude-code --dry-run` failed ("--dry-run is for files and folders")."""
    make_claude_memory(tmp_path / "home", entries=2)
    vault.remember("Note 1: the shop-api service keeps setting number 1 in config/app.toml", scope="project:shop-api")
    head = git_subjects(vault.root)
    dry = run_cli("import", "claude-code", "--dry-run")
    assert git_subjects(vault.root) == head and len(vault.load_all()[0]) == 1
    held = vault.load_all()[0][0].id
    first, *listed = dry.stdout.splitlines()
    assert first == ("would import 3 memories from Claude Code (1 project); skipped 1 already in the vault; "
                     "nothing was written")
    assert [line.split("  ")[2:] for line in listed] == [
        ["(knowledge, project:shop-api)", "Note 0: the shop-api service keeps setting number 0 in config/app.toml"],
        ["(rule, project:shop-api)", "Testing feedback"], ["(identity, project:shop-api)", "User role"]]
    assert dry.stderr == (f"skipped: item -work-shop-api/MEMORY.md:5: already in the vault as {held} "
                          "(same text and scope)\n")
    would = json.loads(run_cli("import", "claude-code", "--dry-run", "--json").stdout)
    real = run_cli("import", "claude-code")
    assert real.stdout == dry.stdout.replace("would import", "imported").replace("; nothing was written", "")
    assert real.stderr == dry.stderr
    assert would["would_import"] == [m.id for m in vault.load_all()[0] if m.source.startswith("claude-code:")]
    again = run_cli("import", "claude-code", "--dry-run").stdout
    assert again.startswith("would import 0 memories from Claude Code (1 project); skipped 3 imported before, "
                            "1 already in the vault; nothing was written")


def test_a_topic_file_is_titled_by_its_description_or_heading_not_its_file_name(vault, tmp_path):
    """New-user trial: memory/build.md came in titled "build"."""
    memory = make_claude_memory(tmp_path / "home", entries=0)
    (memory / "MEMORY.md").write_text("- [Build](build.md)\n- [Release checklist](release.md)\n")
    for name in ("user_role.md", "feedback_testing.md"):
        (memory / name).unlink()
    topics = {"build.md": "---\nname: build\ndescription: How the project is built and tested\ntype: project\n"
                          "---\n# Building\n\nRun `make build`, then `make test`.\n",
              "deploy.md": "# Deploying to production\n\nOnly from main, after CI is green.\n",
              "release.md": "Tag vX.Y on main and push the tag.\n",
              "misc_notes.md": "The staging database is reset every Monday.\n"}
    for name, text in topics.items():
        (memory / name).write_text(text)
    run_cli("import", "claude-code")
    titles = {Path(m.source).name: m.title for m in vault.load_all()[0]}
    assert titles == {"build.md": "How the project is built and tested", "deploy.md": "Deploying to production",
                      "release.md": "Release checklist", "misc_notes.md": "misc notes"}
