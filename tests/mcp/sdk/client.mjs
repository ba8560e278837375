// tests/mcp/sdk.t's client: the official MCP TypeScript SDK (@modelcontextprotocol/sdk,
// pinned in package-lock.json) starts `sbx mcp` as a client application does and uses it.
//
//   node client.mjs RESULT.json SBX CWD
//
// Writes what the SDK returned, for sdk.t to check: the negotiated version, the server's
// info, the tools listed, each call's result (the SDK validates structuredContent against
// the tool's outputSchema), a cancelled call's fate, and how the server ended.
import { writeFileSync } from 'node:fs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const [resultPath, sbx, cwd] = process.argv.slice(2);
const out = {};
const transport = new StdioClientTransport({
  command: sbx, args: ['mcp'], cwd, env: process.env, stderr: 'pipe',
});
let stderr = '';
transport.stderr.on('data', (d) => { stderr += d; });
const client = new Client({ name: 'sbxsh-sdk-test', version: '1.0.0' });
// bounds far above what any call here takes, for a loaded machine (the SDK's default: 60 s)
const slow = { timeout: 300000 };
const run = (command, extra = {}) =>
  client.callTool({ name: 'execute_command', arguments: { command, ...extra } }, undefined, slow);

// the version the client agreed to (the SDK hands it to transports that take it)
transport.setProtocolVersion = (v) => { out.protocolVersion = v; };
try {
  await client.connect(transport, slow);
  out.server = client.getServerVersion();
  out.capabilities = client.getServerCapabilities();
  out.tools = (await client.listTools(undefined, slow)).tools.map((t) => t.name);
  // a command in the git repository: git's view, output on both streams, an exit code,
  // and a file it makes comes back to the host
  out.git = await run('git log --format=%s; git status --short | wc -l; ' +
                      'echo made >made-by-mcp.txt; echo to-stderr >&2; exit 3');
  // 1 MB of output, then a last line: head and tail kept, marked truncated
  out.big = await run('yes 0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmn | ' +
                      'head -c 1048576; echo; echo THE-END');
  out.status = await client.callTool({ name: 'session_status', arguments: {} }, undefined, slow);
  // progress: the SDK asks for it with onprogress; the call waits for a file that a second
  // call makes once the first notification is in
  let firstProgress;
  const progressed = new Promise((resolve) => { firstProgress = resolve; });
  out.progress = [];
  const waiting = client.callTool(
    { name: 'execute_command',
      arguments: { command: 'until [ -e flag-sdk ]; do sleep 0.1; done; echo waited', timeout: 300 } },
    undefined,
    { onprogress: (p) => { out.progress.push(p.progress); firstProgress(); },
      resetTimeoutOnProgress: true, timeout: 300000 });
  await progressed;
  await run('touch flag-sdk');
  out.waited = await waiting;
  // a cancelled call (the SDK sends notifications/cancelled when its signal aborts)
  const ac = new AbortController();
  const cancelled = client.callTool({ name: 'execute_command', arguments: { command: 'sleep 300; echo never' } },
                                    undefined, { signal: ac.signal, timeout: 300000 });
  setTimeout(() => ac.abort('test'), 300);
  out.cancelled = await cancelled.then(() => 'answered', (e) => `rejected: ${e?.message ?? e}`);
  out.after = await run('echo after');
} catch (e) {
  out.error = String(e?.stack ?? e);
} finally {
  const pid = transport.pid;
  await client.close();   // stdin closed, then SIGTERM after 2 s, SIGKILL after 4
  out.stderr = stderr.slice(-2000);
  out.pid = pid;
  writeFileSync(resultPath, JSON.stringify(out));
}
