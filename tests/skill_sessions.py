"""33 sessions of the four clients over two weeks, in their real transcript formats, for skill detection.

The lines follow the transcripts recorded from the real clients (tests/fixtures/sessions/home: Claude
Code 2.1.197, Codex 0.171.0, Gemini CLI 0.61.0, opencode 1.18.33), with the tools each client really has
(Bash/Edit, exec_command/shell/apply_patch, run_shell_command/replace, bash/edit). Planted: three
procedures the user repeats; decoys that must not become skills: one seen in 2 sessions only, one in 3
sessions on one day, one built on `--force`, one whose paths no longer exist, one with `|| true` and
`--no-verify`, one made of MCP calls only, and the looking-around (`git status`, `ls`, reads) in every
session.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import stat
from pathlib import Path

RECORDED = Path(__file__).parent / "fixtures" / "sessions" / "home"
DAY0 = "2026-11-"

RELEASE = ["git pull --rebase origin main", "make changelog", ("edit", "CHANGELOG.md"),
           "git tag -a v1.4.{n} -m 'Release 1.4.{n}'"]
MIGRATION = ["./scripts/db-snapshot.sh staging", ("edit", "migrations/00{m}_change_{n}.sql"),
             "./scripts/migrate.sh --env staging"]
FRONTEND = ["npm ci", "npm run lint", "npm run test -- --coverage"]
SEED = ["docker compose up -d db", "npm run seed"]
TERRAFORM = ["terraform plan -out plan.tfplan", "terraform apply plan.tfplan"]
FORCE_PUSH = ["git fetch origin", "git rebase origin/main", "git push --force origin HEAD:staging"]
LEGACY = ["./tools/legacy-build.sh", ("edit", "legacy/config/app.yml"), "./tools/legacy-deploy.sh --target eu"]
FORMAT = ["npm run format || true", "git commit -am 'format' --no-verify"]
MCP_ONLY = [("mcp", "recall"), ("mcp", "remember")]
PLANTED = {"release": RELEASE, "migration": MIGRATION, "frontend": FRONTEND}
DECOYS = {"seed": SEED, "terraform": TERRAFORM, "force-push": FORCE_PUSH, "legacy": LEGACY, "format": FORMAT,
          "mcp-only": MCP_ONLY}

# (client, day of November, procedure or a filler's own steps)
SESSIONS = [
    ("claude-code", 17, "release"), ("codex", 19, "release"), ("claude-code", 24, "release"), ("gemini", 26, "release"),
    ("opencode", 18, "migration"), ("claude-code", 18, "migration"), ("gemini", 21, "migration"),
    ("codex", 20, "frontend"), ("opencode", 22, "frontend"), ("claude-code", 23, "frontend"), ("codex", 25, "frontend"),
    ("opencode", 28, "frontend"),
    ("claude-code", 19, "seed"), ("gemini", 27, "seed"),
    ("codex", 22, "terraform"), ("codex", 22, "terraform"), ("claude-code", 22, "terraform"),
    ("claude-code", 20, "force-push"), ("opencode", 24, "force-push"), ("codex", 27, "force-push"),
    ("gemini", 18, "legacy"), ("claude-code", 21, "legacy"), ("opencode", 25, "legacy"),
    ("codex", 21, "format"), ("claude-code", 26, "format"), ("gemini", 28, "format"),
    ("claude-code", 16, "mcp-only"), ("gemini", 23, "mcp-only"), ("opencode", 29, "mcp-only"),
    ("claude-code", 25, ["python -m http.server 8000"]), ("codex", 26, [("edit", "src/app.js"), "npm run build"]),
    ("gemini", 24, [("edit", "README.md")]), ("opencode", 27, ["make docs", ("edit", "docs/index.md")]),
]
LOOKING = ["git status", "ls -la"]


def project(root: Path) -> Path:
    """The project the sessions ran in, as it is now: the release, migration and frontend files exist;
    the legacy tools were removed since."""
    files = {
        "Makefile": "changelog:\n\tgit log --oneline > CHANGELOG.md\ndocs:\n\techo docs\n",
        "CHANGELOG.md": "# Changes\n", "package.json": json.dumps({"scripts": {
            "lint": "eslint .", "test": "vitest", "seed": "node seed.js", "format": "prettier -w .", "build": "vite build"}}),
        "scripts/db-snapshot.sh": "#!/bin/sh\n", "scripts/migrate.sh": "#!/bin/sh\n",
        "migrations/0010_change_3.sql": "-- change\n", "src/app.js": "", "README.md": "# webshop\n",
    }
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        if rel.endswith(".sh"):
            path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return root


def steps_of(kind, n: int) -> list:
    steps = kind if isinstance(kind, list) else {**PLANTED, **DECOYS}[kind]
    return [tuple(s[:1]) + (s[1].format(n=n, m=7 + n),) if isinstance(s, tuple) else s.format(n=n) for s in steps]


def write(home: Path, cwd: Path) -> list[tuple[str, str, int, str]]:
    """Write every session under `home` (opencode's database built on the recorded one's schema);
    (client, session id, day, procedure) for each."""
    shutil.copytree(RECORDED, home, dirs_exist_ok=True)
    db = home / ".local" / "share" / "opencode" / "opencode.db"
    with sqlite3.connect(db) as con:
        con.executescript((db.parent / "opencode.sql").read_text(encoding="utf-8"))
    gemini_projects = home / ".gemini" / "projects.json"
    gemini_projects.write_text(json.dumps({"projects": {str(cwd): cwd.name}}), encoding="utf-8")
    out, count = [], {}
    for i, (client, day, kind) in enumerate(SESSIONS):
        name = kind if isinstance(kind, str) else "filler"
        count[name] = count.get(name, 0) + 1
        steps = [*LOOKING, *steps_of(kind, count[name])]
        sid = f"{i:02d}{day:02d}a1b2-{client[:4]}-4c3d-8e9f-{i:012d}"
        when = f"{DAY0}{day:02d}T{9 + i % 8:02d}:{i % 60:02d}"
        WRITERS[client](home, cwd, sid, when, f"Please do the {name} work again", steps)
        out.append((client, sid, day, name))
    return out


def _t(when: str, k: int) -> str:
    return f"{when}:{k:02d}.{k * 7 % 1000:03d}Z"


def _call(step, cwd: Path) -> tuple[str, dict | str]:
    """(kind, argument) of one step: a shell command, an edit (absolute path), an MCP call."""
    if isinstance(step, str):
        return "shell", step
    if step[0] == "edit":
        return "edit", str(cwd / step[1])
    return "mcp", step[1]


def claude(home: Path, cwd: Path, sid: str, when: str, prompt: str, steps: list) -> None:
    folder = home / ".claude" / "projects" / str(cwd).replace("/", "-")
    folder.mkdir(parents=True, exist_ok=True)
    base = {"isSidechain": False, "userType": "external", "entrypoint": "cli", "cwd": str(cwd), "sessionId": sid,
            "version": "2.1.197", "gitBranch": "main"}
    lines = [{"type": "queue-operation", "operation": "enqueue", "timestamp": _t(when, 0), "sessionId": sid,
              "content": prompt},
             {**base, "parentUuid": None, "type": "user", "message": {"role": "user", "content": prompt},
              "uuid": f"{sid}-u0", "timestamp": _t(when, 1), "promptSource": "cli"}]
    for k, step in enumerate(steps, 1):
        kind, arg = _call(step, cwd)
        name, args = {"shell": ("Bash", {"command": arg, "description": "Run " + str(arg)[:30]}),
                      "edit": ("Edit", {"file_path": arg, "old_string": "a", "new_string": "b"}),
                      "mcp": (f"mcp__hafiza__{arg}", {"query": "release"} if arg == "recall" else {"text": "x"})}[kind]
        lines.append({**base, "parentUuid": f"{sid}-u{k - 1}", "type": "assistant", "uuid": f"{sid}-a{k}",
                      "timestamp": _t(when, 2 * k), "message": {
                          "id": f"msg_{k}", "type": "message", "role": "assistant", "model": "test-model",
                          "content": [{"type": "tool_use", "id": f"toolu_{k}", "name": name, "input": args}],
                          "stop_reason": "tool_use", "stop_sequence": None}})
        lines.append({**base, "parentUuid": f"{sid}-a{k}", "type": "user", "uuid": f"{sid}-u{k}",
                      "timestamp": _t(when, 2 * k + 1), "message": {"role": "user", "content": [
                          {"tool_use_id": f"toolu_{k}", "type": "tool_result", "content": "done"}]},
                      "toolUseResult": {"stdout": "done", "stderr": "", "interrupted": False}})
    lines.append({**base, "parentUuid": f"{sid}-u{len(steps)}", "type": "assistant", "uuid": f"{sid}-end",
                  "timestamp": _t(when, 59), "message": {"id": "msg_end", "type": "message", "role": "assistant",
                                                         "model": "test-model", "content": [{"type": "text", "text": "Done."}],
                                                         "stop_reason": "end_turn"}})
    _jsonl(folder / f"{sid}.jsonl", lines)


def codex(home: Path, cwd: Path, sid: str, when: str, prompt: str, steps: list) -> None:
    day = when[:10]
    folder = home / ".codex" / "sessions" / day[:4] / day[5:7] / day[8:10]
    folder.mkdir(parents=True, exist_ok=True)
    lines = [{"timestamp": _t(when, 0), "type": "session_meta", "payload": {
                 "session_id": sid, "id": sid, "timestamp": _t(when, 0), "cwd": str(cwd), "originator": "codex_exec",
                 "cli_version": "0.171.0", "source": "exec"}},
             {"timestamp": _t(when, 1), "type": "response_item", "payload": {
                 "type": "message", "role": "user", "content": [{"type": "input_text", "text": prompt}]}}]
    shells = [s for s in steps if isinstance(s, str)]
    if shells[2:4] == ["npm ci", "npm run lint"]:  # the model ran two steps as one command line
        at = steps.index("npm ci")
        steps = steps[:at] + ["npm ci && npm run lint"] + steps[at + 2:]
    for k, step in enumerate(steps, 1):
        kind, arg = _call(step, cwd)
        if kind == "edit":
            rel = str(Path(arg).relative_to(cwd))
            payload = {"type": "custom_tool_call", "status": "completed", "call_id": f"call_{k}", "name": "apply_patch",
                       "input": f"*** Begin Patch\n*** Update File: {rel}\n@@\n-a\n+b\n*** End Patch\n"}
        elif kind == "mcp":
            payload = {"type": "function_call", "name": arg, "namespace": "mcp__hafiza", "call_id": f"call_{k}",
                       "arguments": json.dumps({"query": "release"})}
        elif k % 2:
            payload = {"type": "function_call", "name": "exec_command", "call_id": f"call_{k}",
                       "arguments": json.dumps({"cmd": arg, "workdir": str(cwd)})}
        else:
            payload = {"type": "function_call", "name": "shell", "call_id": f"call_{k}",
                       "arguments": json.dumps({"command": ["bash", "-lc", arg], "workdir": str(cwd)})}
        lines.append({"timestamp": _t(when, 2 * k), "type": "response_item", "payload": payload})
        lines.append({"timestamp": _t(when, 2 * k + 1), "type": "response_item", "payload": {
            "type": "function_call_output" if payload["type"] == "function_call" else "custom_tool_call_output",
            "call_id": f"call_{k}", "output": "Process exited with code 0\nOutput:\ndone"}})
    lines.append({"timestamp": _t(when, 59), "type": "response_item", "payload": {
        "type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Done."}]}})
    _jsonl(folder / f"rollout-{when.replace(':', '-')}-00-{sid}.jsonl", lines)


def gemini(home: Path, cwd: Path, sid: str, when: str, prompt: str, steps: list) -> None:
    folder = home / ".gemini" / "tmp" / cwd.name / "chats"
    folder.mkdir(parents=True, exist_ok=True)
    lines = [{"sessionId": sid, "projectHash": "8108647791accf0b", "startTime": _t(when, 0),
              "lastUpdated": _t(when, 0), "kind": "main"},
             {"id": f"{sid}-u", "timestamp": _t(when, 1), "type": "user", "content": [{"text": prompt}]}]
    for k, step in enumerate(steps, 1):
        kind, arg = _call(step, cwd)
        name, args = {"shell": ("run_shell_command", {"command": arg, "description": "run it"}),
                      "edit": ("replace", {"file_path": arg, "old_string": "a", "new_string": "b"}),
                      "mcp": (f"mcp_hafiza_{arg}", {"query": "release"})}[kind]
        call = {"id": f"{name}_{k}", "name": name, "args": args, "status": "success", "timestamp": _t(when, 2 * k)}
        lines.append({"id": f"{sid}-g{k}", "timestamp": _t(when, 2 * k), "type": "gemini", "content": "",
                      "thoughts": [], "model": "gemini-2.5-flash"})
        lines.append({"$set": {"lastUpdated": _t(when, 2 * k)}})
        lines.append({"id": f"{sid}-g{k}", "timestamp": _t(when, 2 * k), "type": "gemini", "content": "",
                      "thoughts": [], "model": "gemini-2.5-flash", "toolCalls": [call]})
        lines.append({"id": f"{sid}-r{k}", "timestamp": _t(when, 2 * k + 1), "type": "user", "content": [
            {"functionResponse": {"id": call["id"], "name": name, "response": {"output": "done"}}}]})
    lines.append({"id": f"{sid}-end", "timestamp": _t(when, 59), "type": "gemini", "content": "Done.",
                  "thoughts": [], "model": "gemini-2.5-flash"})
    _jsonl(folder / f"session-{when.replace(':', '-')}-{sid[:8]}.jsonl", lines)


def opencode(home: Path, cwd: Path, sid: str, when: str, prompt: str, steps: list) -> None:
    import datetime as dt

    start = int(dt.datetime.fromisoformat(_t(when, 0).replace("Z", "+00:00")).timestamp() * 1000)
    sid = "ses_" + sid.replace("-", "")[:26]
    db = home / ".local" / "share" / "opencode" / "opencode.db"
    with sqlite3.connect(db) as con:
        con.execute("INSERT INTO session (id, project_id, slug, directory, title, version, time_created, time_updated)"
                    " VALUES (?, 'p1', 'quiet-run', ?, 'Test session', '1.18.33', ?, ?)", (sid, str(cwd), start, start))
        user = f"msg_{sid}_u"
        con.execute("INSERT INTO message VALUES (?, ?, ?, ?, ?)",
                    (user, sid, start + 1, start + 1, json.dumps({"role": "user", "time": {"created": start + 1}})))
        con.execute("INSERT INTO part VALUES (?, ?, ?, ?, ?, ?)", (f"prt_{sid}_u", user, sid, start + 1, start + 1,
                                                                 json.dumps({"type": "text", "text": prompt})))
        for k, step in enumerate(steps, 1):
            kind, arg = _call(step, cwd)
            tool, args = {"shell": ("bash", {"command": arg, "description": "run it"}),
                          "edit": ("edit", {"filePath": arg, "oldString": "a", "newString": "b"}),
                          "mcp": (f"hafiza_{arg}", {"query": "release"})}[kind]
            at = start + 1000 * k
            message = f"msg_{sid}_{k:02d}"
            con.execute("INSERT INTO message VALUES (?, ?, ?, ?, ?)", (message, sid, at, at, json.dumps(
                {"role": "assistant", "path": {"cwd": str(cwd), "root": str(cwd)}, "time": {"created": at}})))
            con.execute("INSERT INTO part VALUES (?, ?, ?, ?, ?, ?)", (f"prt_{sid}_{k:02d}", message, sid, at, at, json.dumps(
                {"type": "tool", "tool": tool, "callID": f"call_{k}",
                 "state": {"status": "completed", "input": args, "output": "done", "title": "", "metadata": {}}})))


WRITERS = {"claude-code": claude, "codex": codex, "gemini": gemini, "opencode": opencode}


def _jsonl(path: Path, lines: list[dict]) -> None:
    path.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines), encoding="utf-8")
