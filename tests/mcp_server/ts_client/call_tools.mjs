// Drives a hypd MCP server over stdio with the official TypeScript MCP SDK's Client, which
// validates a tool's structured content against its output schema (as the MCP
// specification asks of clients). Reads one JSON object on stdin:
//   {"command": "...", "args": [...], "env": {...}, "cwd": "...", "calls": [{"name", "arguments"}]}
// and prints one JSON object: {"tools": [names], "results": [{name, isError, text,
// structuredContent, meta} | {name, protocolError: {code, message}}]}.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const job = JSON.parse(Buffer.concat(chunks).toString("utf8"));

const transport = new StdioClientTransport({
  command: job.command, args: job.args, env: job.env, cwd: job.cwd, stderr: "inherit",
});
const client = new Client({ name: "hypd-ts-test", version: "1.0.0" });
await client.connect(transport);
const listed = await client.listTools();  // the client caches each tool's output schema
const results = [];
for (const call of job.calls) {
  try {
    const r = await client.callTool({ name: call.name, arguments: call.arguments });
    results.push({
      name: call.name,
      isError: r.isError === true,
      text: (r.content || []).filter((b) => b.type === "text").map((b) => b.text),
      structuredContent: r.structuredContent ?? null,
      meta: r._meta ?? null,
    });
  } catch (err) {
    results.push({ name: call.name, protocolError: { code: err.code ?? null, message: String(err.message) } });
  }
}
await client.close();
process.stdout.write(JSON.stringify({ tools: listed.tools.map((t) => t.name), results }));
