"""The shared server's limits (issue 29, item 5): one user's sessions are capped and expire when idle, with the
real MCP client against a real server on 127.0.0.1; a client that goes away mid-body is one line in the log."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import time
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import Implementation

from conftest import run_cli
from test_isolation import INIT
from test_mcp import free_port, listening, told_like_hafiza

CAP = 4  # the default is 32; a smaller cap keeps the test light, the rule is the same
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@contextlib.contextmanager
def server(tmp_path: Path, *args: str):
    port = free_port()
    log_path = tmp_path / f"server-{port}.log"
    log = open(log_path, "w")
    proc = subprocess.Popen([sys.executable, "-m", "hafiza.cli.main", "mcp", "--http", f"127.0.0.1:{port}", "--users",
                             *args], stdout=log, stderr=subprocess.STDOUT)
    try:
        listening(proc, port, log_path, seconds=30)
        yield f"http://127.0.0.1:{port}/mcp", port, log_path
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        log.close()


@pytest.fixture
def tokens():
    return {name: run_cli("token", "add", name).stdout.strip() for name in ("alice", "bob")}


async def open_sessions(url: str, token: str, count: int, stack: contextlib.AsyncExitStack) -> list:
    """`count` sessions held open by the real MCP client, each with its own HTTP client. With the initialize
    handshake (`legacy`), as the agents of today connect: each is a session the server holds (the 2026
    protocol's requests stand alone and hold none)."""
    opened = []
    for _ in range(count):
        http = await stack.enter_async_context(httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"},
                                                                  timeout=60))
        client = await stack.enter_async_context(Client(streamable_http_client(url, http_client=http),
                                                        client_info=Implementation(name="agent", version="1"),
                                                        mode="legacy"))
        await client.list_tools()  # the session is open on the server
        opened.append(client)
    return opened


def test_one_user_s_sessions_are_capped_and_another_user_is_not_held_up(tmp_path, tokens):
    async def main(url):
        async with contextlib.AsyncExitStack() as stack:
            held = await open_sessions(url, tokens["alice"], CAP, stack)
            for client in held:  # every one works
                assert not (await client.call_tool("recall", {"query": "deploy"})).is_error
            with pytest.raises(Exception):
                async with contextlib.AsyncExitStack() as more:
                    await open_sessions(url, tokens["alice"], 1, more)
            refused = httpx2.post(url, json=INIT, headers={**HEADERS, "Authorization": f"Bearer {tokens['alice']}"})
            assert refused.status_code == 503
            async with contextlib.AsyncExitStack() as other:  # bob's cap is his own
                (bob,) = await open_sessions(url, tokens["bob"], 1, other)
                assert not (await bob.call_tool("recall", {"query": "deploy"})).is_error
        async with contextlib.AsyncExitStack() as stack:  # alice's closed sessions freed their room
            await open_sessions(url, tokens["alice"], CAP, stack)

    with server(tmp_path, "--sessions", str(CAP)) as (url, _, _):
        anyio.run(main, url)


def test_an_idle_session_expires_and_its_client_can_start_another(tmp_path, tokens):
    with server(tmp_path, "--sessions", "1", "--idle", "1") as (url, _, _):
        auth = {**HEADERS, "Authorization": f"Bearer {tokens['alice']}"}
        opened = httpx2.post(url, json=INIT, headers=auth)
        assert opened.status_code == 200
        session = opened.headers["mcp-session-id"]
        ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
        deadline = time.monotonic() + 120  # a bound for a loaded machine, not a measurement
        while True:
            time.sleep(3)  # idle for longer than --idle: a ping itself is a request, and keeps a session alive
            if httpx2.post(url, json=ping, headers={**auth, "mcp-session-id": session}).status_code == 404:
                break
            assert time.monotonic() < deadline, "the idle session was never closed"
        assert httpx2.post(url, json=INIT, headers=auth).status_code == 200  # its room is free again


def test_a_client_gone_mid_body_is_one_line_in_the_log(tmp_path, tokens):
    with server(tmp_path) as (url, port, log_path):
        with socket.create_connection(("127.0.0.1", port)) as raw:
            raw.sendall(f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {tokens['alice']}\r\n"
                        "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
                        "Content-Length: 5000\r\n\r\n{\"jsonrpc\": \"2.0\", ".encode())
            time.sleep(0.5)  # the server is reading the body when the client goes
        deadline = time.monotonic() + 60
        while "went away" not in log_path.read_text():
            assert time.monotonic() < deadline and "Traceback" not in log_path.read_text(), log_path.read_text()
            time.sleep(0.2)
        auth = {**HEADERS, "Authorization": f"Bearer {tokens['alice']}"}
        assert httpx2.post(url, json=INIT, headers=auth).status_code == 200  # it serves on
        text = log_path.read_text()
        assert "Traceback" not in text and len([line for line in text.splitlines() if "went away" in line]) == 1, text


def test_bad_arguments_read_the_same_on_the_shared_server(tmp_path, tokens):
    """Each user's server is `create_server`'s, so a refused argument, or one the tool does not have, is told
    as over stdio (test_mcp) and writes nothing."""
    async def main(url):
        async with contextlib.AsyncExitStack() as stack:
            (client,) = await open_sessions(url, tokens["alice"], 1, stack)
            refused = await client.call_tool("recall", {"query": "deploy", "limit": 500})
            assert refused.is_error
            told_like_hafiza(refused.content[0].text, "recall", "limit", "expected at most 20, got 500")
            unknown = await client.call_tool("remember", {"text": "Deploys go out on Tuesdays.", "tag": ["deploy"]})
            assert unknown.is_error
            told_like_hafiza(unknown.content[0].text, "remember", "tag", "did you mean 'tags'?")
            assert (await client.call_tool("list", {})).structured_content["total"] == 0  # nothing was saved
            assert not (await client.call_tool("recall", {"query": "deploy"})).is_error

    with server(tmp_path) as (url, _, _):
        anyio.run(main, url)
