"""The real Claude Code reads a skill `hafiza skills promote` installed, and never offers an inert draft.

In a temporary HOME holding the 33 sessions of tests/skill_sessions.py: `hafiza skills draft`, then
`hafiza skills promote ci-lint-test` (installed in ~/.claude/skills/), and the text of another draft, still
carrying `disable-model-invocation: true`, copied there by hand. `claude -p` against the fake model server:
the promoted skill is in the list of skills the model is offered, the inert one is not.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: skill_sessions, model_server
sys.path.insert(0, str(Path(__file__).resolve().parent))      # tests/e2e/: rig, test_claude_code
import skill_sessions  # noqa: E402
from test_claude_code import World, messages_text  # noqa: E402


@pytest.fixture(scope="module")
def offered(tmp_path_factory) -> str:
    world = World(tmp_path_factory.mktemp("claude-skills"))
    skill_sessions.write(world.home, skill_sessions.project(world.project))
    world.hafiza("init")
    world.hafiza("skills", "draft")
    world.hafiza("skills", "promote", "ci-lint-test")
    inert = world.home / ".claude" / "skills" / "pull-changelog-tag" / "SKILL.md"
    inert.parent.mkdir(parents=True)
    inert.write_text(world.hafiza("skills", "show", "pull-changelog-tag").stdout)
    run = world.run("hello, which skills do you have?")
    return "\n".join(messages_text(body) for body in run.bodies)


def test_the_promoted_skill_is_offered_to_the_model(offered):
    assert "- ci-lint-test: The 3 steps from `npm ci` to `npm run test -- --coverage`" in offered


def test_an_inert_draft_is_never_offered(offered):
    assert "pull-changelog-tag" not in offered
