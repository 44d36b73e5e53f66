// Episodes by TypeScript SDK clients over streamable HTTP, one after the other, each
// ending with client.close() (which sends no DELETE). Usage: node http_episodes.mjs URL ROUNDS
// Prints one JSON line: what the server answered; exits 1 with the error otherwise.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url, rounds] = [process.argv[2], Number(process.argv[3] ?? "1")];
const BUSY_TRIES = 400; // a slot freed by the last client's close is taken within them

async function tool(client, name, args) {
  const result = await client.callTool({ name, arguments: args });
  return result;
}

async function round(i, summary) {
  const client = new Client({ name: "intercode-node-test", version: "1" });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  if (i === 0) {
    summary.templates = (await client.listResourceTemplates()).resourceTemplates;
    try {
      await client.readResource({ uri: "intercode://task" });
      summary.readBeforeReset = "no error";
    } catch (err) {
      summary.readBeforeReset = { code: err.code, message: err.message, data: err.data };
    }
  }
  let started;
  for (let tries = 0; ; tries++) {
    started = await tool(client, "reset", { task: 0 });
    const error = started.structuredContent?.error;
    if (error !== "busy") break;
    if (tries >= BUSY_TRIES) throw new Error(`round ${i}: still busy: ${started.content[0].text}`);
    summary.busyRetries++;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  if (started.isError) throw new Error(`round ${i}: reset failed: ${started.content[0].text}`);
  const ran = await tool(client, "execute", { code: "echo node" });
  if (ran.structuredContent.output !== "node\n") throw new Error(`round ${i}: ${JSON.stringify(ran)}`);
  const read = await client.readResource({ uri: "intercode://task" });
  if (read.contents[0].text !== started.structuredContent.query) throw new Error("task differs");
  const ended = await tool(client, "submit", {});
  if (ended.structuredContent.done !== true) throw new Error(`round ${i}: ${JSON.stringify(ended)}`);
  await client.close();
  summary.rounds++;
}

const summary = { rounds: 0, busyRetries: 0 };
try {
  for (let i = 0; i < rounds; i++) await round(i, summary);
  console.log(JSON.stringify(summary));
} catch (err) {
  console.log(JSON.stringify({ ...summary, error: String(err) }));
  process.exit(1);
}
