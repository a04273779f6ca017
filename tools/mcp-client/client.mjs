// A real MCP client for tests/it/mcp.rs: the official TypeScript SDK's Client over its stdio
// transport. It starts the server command, lists the tools, makes each call of CALLS.json
// (`[{"name": ..., "arguments": {...}}, ...]`) in order and prints one JSON transcript on
// stdout: {server, tools, calls: [{name, result} | {name, error: {code, message}}]}. The test
// asserts on the transcript; this script decides nothing.
//
// usage: node client.mjs CALLS.json COMMAND [ARG...]
import { readFileSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [callsFile, command, ...args] = process.argv.slice(2);
if (!callsFile || !command) {
  process.stderr.write("usage: node client.mjs CALLS.json COMMAND [ARG...]\n");
  process.exit(2);
}
const calls = JSON.parse(readFileSync(callsFile, "utf8"));
// The whole environment (the SDK passes a safe subset by default): the test's XDG_STATE_HOME.
const transport = new StdioClientTransport({ command, args, env: process.env, stderr: "inherit" });
const client = new Client({ name: "referee-it", version: "1.0.0" });
await client.connect(transport);
const out = {
  server: client.getServerVersion(),
  tools: (await client.listTools()).tools,
  calls: [],
};
for (const c of calls) {
  try {
    const result = await client.callTool({ name: c.name, arguments: c.arguments });
    out.calls.push({ name: c.name, result });
  } catch (e) {
    out.calls.push({ name: c.name, error: { code: e.code ?? null, message: String(e.message) } });
  }
}
await client.close();
process.stdout.write(JSON.stringify(out));
