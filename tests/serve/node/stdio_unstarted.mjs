// A TypeScript SDK client launching a stdio server with the SDK's default (minimal)
// environment plus the variables named on the command line.
// Usage: node stdio_unstarted.mjs VAR=VALUE... -- COMMAND ARGS...
// Prints one JSON line: the server's instructions and the errors its requests got.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport, getDefaultEnvironment } from "@modelcontextprotocol/sdk/client/stdio.js";

const argv = process.argv.slice(2);
const cut = argv.indexOf("--");
const env = getDefaultEnvironment();
for (const pair of argv.slice(0, cut)) {
  const at = pair.indexOf("=");
  env[pair.slice(0, at)] = pair.slice(at + 1);
}
const [command, ...args] = argv.slice(cut + 1);
const transport = new StdioClientTransport({ command, args, env, stderr: "pipe" });
let stderr = "";
transport.stderr?.on("data", (chunk) => { stderr += chunk; });
const client = new Client({ name: "intercode-node-test", version: "1" });
const out = { passed: Object.keys(env).sort() };
async function attempt(what, call) {
  try {
    out[what] = { answer: await call() };
  } catch (err) {
    out[what] = { code: err.code, message: err.message };
  }
}
await attempt("connect", async () => { await client.connect(transport); return "connected"; });
if (out.connect.answer) {
  out.instructions = client.getInstructions();
  await attempt("listTools", () => client.listTools());
  await attempt("reset", () => client.callTool({ name: "reset", arguments: { task: 0 } }));
  await attempt("readTask", () => client.readResource({ uri: "intercode://task" }));
}
await client.close();
out.stderr = stderr;
console.log(JSON.stringify(out));
