// `pubapi mcp --http` driven by the TypeScript MCP SDK's client (npm
// `@modelcontextprotocol/sdk`) over streamable HTTP, as an agent host would.
//
// Run by cli/tests/mcp_clients.rs, which starts `pubapi mcp --http 127.0.0.1:0 --allow-writes`
// with no credentials (so it serves the built-in sandbox) and says in the environment:
//   MCP_URL       the server's URL (http://127.0.0.1:PORT/mcp)
//   PUBAPI_KINDS  the 14 report kinds, as a JSON list
// The SDK's client checks every structured result against the tool's output schema (and
// throws when one does not fit). Prints one JSON line, the outcome, last; exits 1 on failure.

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const KINDS = JSON.parse(process.env.PUBAPI_KINDS);
const PLAIN = [
  "whoami", "quota", "audit_status", "audit_read", "audit_delete", "events_read",
  "webhooks_list", "webhooks_show", "webhooks_register", "webhooks_enable",
  "webhooks_disable", "webhooks_delete", "search",
];
const startName = (kind) => `audit_start_${kind.replaceAll("-", "_")}`;

function check(ok, what) {
  if (!ok) throw new Error(what);
}

const client = new Client({ name: "pubapi-node-test", version: "1.0.0" });
await client.connect(new StreamableHTTPClientTransport(new URL(process.env.MCP_URL)));
const { tools } = await client.listTools();
const byName = new Map(tools.map((tool) => [tool.name, tool]));
const called = new Set();

async function call(name, args, error = false) {
  const result = await client.callTool({ name, arguments: args });
  called.add(name);
  const text = result.content.filter((b) => b.type === "text").map((b) => b.text).join(" ");
  check(Boolean(result.isError) === error, `${name} ${JSON.stringify(args)}: ${text}`);
  check(text.trim() !== "", `${name}: no text summary`);
  if (error) {
    check(result.structuredContent === undefined, `${name}: an error with structured content`);
    return result._meta["pubapi/error"];
  }
  check(result.structuredContent !== undefined, `${name}: no structured content`);
  return result.structuredContent;
}

function resolve(schema, root) {
  if (!schema.$ref) return schema;
  return schema.$ref.replace(/^#\//, "").split("/").reduce((at, part) => at[part], root);
}

function argumentsFor(kind, schema, start, end) {
  const args = { date_start: start, date_end: end };
  for (const name of schema.required ?? []) {
    if (name in args) continue;
    const prop = resolve(schema.properties[name], schema);
    if (prop.type === "array") {
      const item = resolve(prop.items, schema);
      args[name] = item.enum ? [item.enum[0]] : [];
    } else if (prop.enum) {
      args[name] = prop.enum[0];
    }
  }
  if (kind === "files") args.folders = ["/Shared"];
  return args;
}

const sleep = (seconds) => new Promise((done) => setTimeout(done, seconds * 1000));
const day = (back) => new Date(Date.now() - back * 86_400_000).toISOString().slice(0, 10);

const expected = new Set([...PLAIN, ...KINDS.map(startName)]);
check(tools.length === expected.size && tools.every((t) => expected.has(t.name)),
  `tools: ${tools.map((t) => t.name).join(", ")}`);
for (const tool of tools) {
  check(tool.outputSchema?.type === "object", `${tool.name}: output schema`);
  check(tool.inputSchema.properties.act_as, `${tool.name}: no act_as`);
  const destructive = tool.name === "audit_delete" || tool.name === "webhooks_delete";
  check(Boolean(tool.annotations?.destructiveHint) === destructive, `${tool.name}: destructive`);
}

const me = await call("whoami", {});
check(me.whoami.username === "admin", "whoami");
const quota = await call("quota", {});
check(quota.classes.length === 2, "quota");
const found = await call("search", { query: "invoice retention" });
check(found.response.results.length > 0, "search");

const bad = await call("webhooks_register", { url: "http://hooks.example.com/x" }, true);
check(bad.kind === "invalid_input" && bad.field === "url" && !bad.sent, `refusal: ${JSON.stringify(bad)}`);
const late = await call("audit_start_logins",
  { date_start: day(1), date_end: day(3), events: ["logins"] }, true);
check(late.field === "date_end" && !late.sent, `refusal: ${JSON.stringify(late)}`);

const unchecked = await call("webhooks_register", { url: "https://hooks.example.com/node", eventType: ["fs:*"] }, true);
check(unchecked.field === "url" && !unchecked.sent, `endpoint check: ${JSON.stringify(unchecked)}`);
const made = await call("webhooks_register",
  { url: "https://hooks.example.com/node", eventType: ["fs:*"], skip_endpoint_check: true });
const hook = made.webhook.webhookId;
check((await call("webhooks_list", {})).webhooks.some((w) => w.webhookId === hook), "listed");
check((await call("webhooks_show", { webhook_id: hook })).webhook.url === "https://hooks.example.com/node", "shown");
check((await call("webhooks_disable", { webhook_id: hook })).webhook.status === "disabled", "disabled");
check((await call("webhooks_enable", { webhook_id: hook })).webhook.status === "enabled", "enabled");
await call("webhooks_delete", { webhook_id: hook });

const window = await call("events_read", { cursor: 0, max_events: 10 });
check(window.events.length === 10 && window.next_cursor >= window.events[9].id, "events window");
const next = await call("events_read", { cursor: window.next_cursor, max_events: 10 });
check(next.events[0].id > window.events[9].id, "the cursor went on");

const jobs = new Map();
for (const kind of KINDS) {
  const name = startName(kind);
  jobs.set(kind, await call(name, argumentsFor(kind, byName.get(name).inputSchema, day(3), day(1))));
}
const reports = new Map();
while (reports.size < jobs.size) {
  let wait = 0;
  for (const [kind, job] of jobs) {
    if (reports.has(kind)) continue;
    const status = await call("audit_status", { job_id: job.job_id });
    if (status.state === "completed") reports.set(kind, status.report);
    else wait = Math.max(wait, status.ask_again_in_seconds);
  }
  await sleep(wait);
}
let rows = 0;
for (const [, report] of reports) {
  const page = await call("audit_read", { report, page_size: 1000 });
  check(page.rows.length === (page.total ?? page.rows.length), `${report}: one page holds it`);
  rows += page.rows.length;
  await call("audit_delete", { report });
}

check([...expected].every((name) => called.has(name)),
  `not called: ${[...expected].filter((n) => !called.has(n))}`);
await client.close();
console.log(JSON.stringify({ ok: true, called: [...called].sort(), audit_rows: rows }));
