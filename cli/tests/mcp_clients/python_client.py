"""`pubapi mcp` driven by the Python MCP SDK (PyPI `mcp`) over stdio, as an agent host would.

Run by cli/tests/mcp_clients.rs, which serves a sandbox and says where in the environment:
  PUBAPI_BIN       the pubapi binary
  PUBAPI_BASE_URL  the sandbox's base URL, PUBAPI_TOKEN its admin token (or neither: the
                   built-in sandbox)
  PUBAPI_KINDS     the 14 report kinds, as a JSON list (the SDK's table of them)
  MCP_MODE         tour (every tool, with --allow-writes), readonly (no --allow-writes) or
                   quota (two search calls on a token with 99 of its 100 AI calls used)
Prints one JSON line, the outcome, last; exits non-zero on any failed check.
"""

import asyncio
import datetime
import json
import os
import sys

import jsonschema
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from common import (
    PLAIN_TOOLS,
    arguments_for,
    check,
    check_schemas,
    report_window,
)

MODE = os.environ["MCP_MODE"]
TOKEN = os.environ.get("PUBAPI_TOKEN", "")
KINDS = json.loads(os.environ["PUBAPI_KINDS"])
TEXTS = []


def server_parameters():
    env = {"PUBAPI_CONFIG": "/nonexistent/pubapi/config.toml"}
    for name in ("PUBAPI_BASE_URL", "PUBAPI_TOKEN"):
        if os.environ.get(name):
            env[name] = os.environ[name]
    args = ["mcp"] + (["--allow-writes"] if MODE == "tour" else [])
    return StdioServerParameters(command=os.environ["PUBAPI_BIN"], args=args, env=env)


class Tools:
    """The session and the tools it listed, each result checked against its output schema."""

    def __init__(self, session, listed):
        self.session = session
        self.tools = {tool.name: tool for tool in listed}
        self.called = set()

    async def call(self, name, arguments, error=False):
        result = await self.session.call_tool(name, arguments)
        self.called.add(name)
        text = " ".join(block.text for block in result.content if block.type == "text")
        TEXTS.append(text)
        TEXTS.append(json.dumps(result.structured_content))
        check(bool(result.is_error) == error, f"{name} {arguments}: is_error {result.is_error}: {text}")
        check(text.strip() != "", f"{name}: no text summary")
        if error:
            check(result.structured_content is None, f"{name}: an error with structured content")
            return {"error": (result.meta or {})["pubapi/error"]}
        # The SDK checked it already; checked again here, so a client that does not is covered.
        jsonschema.validate(result.structured_content, self.tools[name].output_schema)
        return result.structured_content


async def audit_tour(tools):
    start, end = report_window()
    jobs = {}
    for kind in KINDS:
        name = "audit_start_" + kind.replace("-", "_")
        job = await tools.call(name, arguments_for(kind, tools.tools[name].input_schema, start, end))
        check(job["state"] == "running" and not job["polled"], f"{name}: {job}")
        jobs[kind] = job
        if len(jobs) == 1:
            # At once: too soon for the platform's floor: the last known state, nothing sent.
            early = await tools.call("audit_status", {"job_id": job["job_id"]})
            check(not early["polled"] and early["ask_again_in_seconds"] > 0, f"early: {early}")
    reports = {}
    while len(reports) < len(jobs):
        wait = 0
        for kind, job in jobs.items():
            if kind in reports:
                continue
            status = await tools.call("audit_status", {"job_id": job["job_id"]})
            if status["state"] == "completed":
                reports[kind] = status["report"]
            else:
                wait = max(wait, status["ask_again_in_seconds"])
        await asyncio.sleep(wait)
    # The logins report, page by page: the cursors walk the total, no row twice.
    cursor, rows, total = 0, 0, None
    while cursor is not None:
        page = await tools.call("audit_read", {"report": reports["logins"], "cursor": cursor, "page_size": 7})
        check(page["offset"] == cursor, f"page at {cursor}: {page['offset']}")
        total = page["total"]
        rows += len(page["rows"])
        cursor = page["next_cursor"]
    check(total is not None and rows == total and total > 7, f"logins: {rows} rows of {total}")
    for kind, report in reports.items():
        await tools.call("audit_read", {"report": report, "page_size": 5})
        deleted = await tools.call("audit_delete", {"report": report})
        check(deleted["deleted"] == report, f"deleted {deleted}")
    gone = await tools.call("audit_read", {"report": reports["logins"]}, error=True)
    check(gone["error"]["kind"] == "not_found", f"deleted report read: {gone}")
    return {"audit_rows": rows}


async def events_tour(tools):
    perm = {"types": ["permission_change"]}
    first = await tools.call("events_read", {"checkpoint": "perm", "max_events": 2, **perm})
    check(len(first["events"]) == 2 and not first["caught_up"], f"first window: {first}")
    check(all(e["type"] == "permission_change" for e in first["events"]), "types filter")
    by_cursor = await tools.call("events_read", {"cursor": first["next_cursor"], "max_events": 1, **perm})
    again = await tools.call("events_read", {"checkpoint": "perm", "max_events": 1, **perm})
    check(again["events"][0]["id"] > first["events"][-1]["id"], "the checkpoint went on where it stopped")
    check([e["id"] for e in by_cursor["events"]] == [e["id"] for e in again["events"]], "cursor = checkpoint")
    folder = await tools.call("events_read", {"cursor": 0, "folder": "/Projects", "max_events": 20})
    paths = [e["data"]["target_path"] for e in folder["events"] if "target_path" in e.get("data", {})]
    check(paths and all(p.startswith("/Projects") for p in paths), f"folder filter: {paths}")
    newest = await tools.call("events_read", {})
    check(newest["caught_up"] and newest["ask_again_in_seconds"] > 0, f"from the newest: {newest}")
    quiet = await tools.call("events_read", {"cursor": first["next_cursor"]})
    check(not quiet["polled"] and quiet["events"] == [], f"within the poll interval: {quiet}")


async def webhooks_tour(tools):
    request = {"url": "https://hooks.example.com/pubapi", "eventType": ["fs:add_file"], "path": "/Shared"}
    unchecked = await tools.call("webhooks_register", request, error=True)
    check(unchecked["error"]["field"] == "url" and not unchecked["error"]["sent"], f"endpoint check: {unchecked}")
    made = await tools.call("webhooks_register", {**request, "skip_endpoint_check": True})
    hook = made["webhook"]["webhookId"]
    listed = await tools.call("webhooks_list", {})
    check(any(w["webhookId"] == hook for w in listed["webhooks"]), "listed")
    shown = await tools.call("webhooks_show", {"webhook_id": hook})
    check(shown["webhook"]["url"] == "https://hooks.example.com/pubapi", f"shown: {shown}")
    off = await tools.call("webhooks_disable", {"webhook_id": hook})
    check(off["webhook"]["status"] == "disabled", f"disabled: {off}")
    on = await tools.call("webhooks_enable", {"webhook_id": hook})
    check(on["webhook"]["status"] == "enabled", f"enabled: {on}")
    await tools.call("webhooks_delete", {"webhook_id": hook})
    after = await tools.call("webhooks_list", {})
    check(all(w["webhookId"] != hook for w in after["webhooks"]), "deleted")


async def refusals(tools):
    """Bad input: the SDK's refusal, naming the field; nothing sent."""
    cases = [
        ("audit_start_logins", {"date_start": "2026-03-05", "date_end": "2026-03-01", "events": ["logins"]}, "date_end"),
        ("audit_start_logins", {"date_start": "03/01/2026", "date_end": "2026-03-05", "events": ["logins"]}, None),
        ("webhooks_register", {"url": "http://hooks.example.com/x"}, "url"),
        ("events_read", {"max_events": 500}, "max_events"),
        ("audit_read", {"report": "nonsense"}, "report"),
        ("whoami", {"act_as": "sam\r\nx-evil: 1"}, "act_as"),
    ]
    for name, arguments, field in cases:
        refused = await tools.call(name, arguments, error=True)
        error = refused["error"]
        check(error["kind"] == "invalid_input" and not error["sent"], f"{name}: {error}")
        if field:
            check(error["field"] == field, f"{name}: field {error['field']}, not {field}")


async def tour(tools):
    listed = set(tools.tools)
    expected = set(PLAIN_TOOLS) | {"audit_start_" + k.replace("-", "_") for k in KINDS}
    check(listed == expected, f"tools: {sorted(listed ^ expected)}")
    me = await tools.call("whoami", {})
    check(me["whoami"]["username"] == "admin", f"whoami: {me}")
    acting = await tools.call("whoami", {"act_as": "sam"})
    check(acting["acting_as"] == "sam" and acting["whoami"]["username"] == "sam", f"act_as: {acting}")
    quota = await tools.call("quota", {})
    check({c["class"] for c in quota["classes"]} == {"general", "ai"}, f"quota: {quota}")
    found = await tools.call("search", {"query": "travel policy"})
    check(len(found["response"]["results"]) > 0, "search found nothing")
    await refusals(tools)
    await webhooks_tour(tools)
    await events_tour(tools)
    outcome = await audit_tour(tools)
    check(tools.called == expected, f"not called: {sorted(expected - tools.called)}")
    return outcome


async def readonly(tools):
    writing = {"webhooks_register", "webhooks_enable", "webhooks_disable", "webhooks_delete", "audit_delete"}
    check(not (writing & set(tools.tools)), f"listed without --allow-writes: {writing & set(tools.tools)}")
    refused = await tools.call("webhooks_register", {"url": "https://hooks.example.com/pubapi"}, error=True)
    check(refused["error"]["kind"] == "writes_not_allowed" and not refused["error"]["sent"], f"{refused}")
    refused = await tools.call("audit_delete", {"report": "logins/abc"}, error=True)
    check(refused["error"]["kind"] == "writes_not_allowed", f"{refused}")
    return {"listed": len(tools.tools)}


async def quota(tools):
    hundredth = await tools.call("search", {"query": "travel"})
    check(len(hundredth["response"]["results"]) > 0, "the 100th AI call")
    refused = await tools.call("search", {"query": "travel"}, error=True)
    error = refused["error"]
    check(error["kind"] == "quota_exhausted" and error["class"] == "ai" and not error["sent"], f"{error}")
    resets_at = datetime.datetime.fromisoformat(error["resets_at"].replace("Z", "+00:00"))
    now = datetime.datetime.now(datetime.timezone.utc)
    check(now < resets_at <= now + datetime.timedelta(hours=24, minutes=1), f"resets at {resets_at}")
    left = await tools.call("quota", {})
    ai = next(c for c in left["classes"] if c["class"] == "ai")
    check(ai["remaining_today"] == 0 and ai["resets_at"], f"quota after: {ai}")
    return {"resets_at": error["resets_at"], "message": error["message"]}


async def main():
    errors = open(os.environ.get("MCP_SERVER_STDERR", os.devnull), "w")
    async with stdio_client(server_parameters(), errlog=errors) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            listed = (await session.list_tools()).tools
            check_schemas(listed)
            tools = Tools(session, listed)
            outcome = await {"tour": tour, "readonly": readonly, "quota": quota}[MODE](tools)
    if TOKEN:
        check(all(TOKEN not in text for text in TEXTS), "the token is in a result")
    print(json.dumps({"ok": True, "mode": MODE, "called": sorted(tools.called), **outcome}))


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except BaseException as e:  # the test prints what failed, out of anyio's task groups
        while isinstance(e, BaseExceptionGroup) and len(e.exceptions) == 1:
            e = e.exceptions[0]
        print(f"FAILED: {type(e).__name__}: {e}", file=sys.stderr)
        sys.exit(1)
