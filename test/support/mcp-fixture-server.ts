import { spawn } from 'node:child_process';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { z } from 'zod';

/**
 * An MCP server over stdio for the MCP tests (bundled: `bundled('mcp-fixture-server')`), with a tool
 * for each thing the host must handle: a crash mid-call, a call that hangs until cancelled (and says
 * on stderr that the cancel arrived), progress, annotations, `isError`, structured content, images
 * and resources, a tool list that changes on request, its environment, and a grandchild process.
 * It says `fixture ready` on stderr once it serves.
 */

const server = new McpServer({ name: 'turnchart-fixture', version: '1.0.0' });
const text = (value: string) => ({ content: [{ type: 'text' as const, text: value }] });

server.registerTool(
  'echo',
  { description: 'Answers with its text.', inputSchema: { text: z.string() }, annotations: { readOnlyHint: true, idempotentHint: true } },
  ({ text: said }) => text(said),
);

server.registerTool('writer', { description: 'Pretends to write.', inputSchema: { path: z.string() } }, ({ path }) => text(`wrote ${path}`));

server.registerTool(
  'careful_writer',
  { description: 'Writes without destroying.', inputSchema: { path: z.string() }, annotations: { destructiveHint: false, idempotentHint: false } },
  ({ path }) => text(`appended to ${path}`),
);

server.registerTool('crash', { description: 'Exits the server in the middle of the call.' }, () => {
  process.exit(1);
});

server.registerTool('hang', { description: 'Answers only when cancelled.', annotations: { readOnlyHint: true } }, (extra) =>
  new Promise((resolve) => {
    console.error(`hang: started request ${String(extra.requestId)}`);
    extra.signal.addEventListener('abort', () => {
      console.error(`hang: cancelled request ${String(extra.requestId)}`);
      resolve(text('cancelled'));
    });
  }),
);

server.registerTool(
  'progress',
  { description: 'Reports progress step by step.', inputSchema: { steps: z.number().int().min(1).max(100) }, annotations: { readOnlyHint: true } },
  async ({ steps }, extra) => {
    const token = extra._meta?.progressToken;
    for (let step = 1; step <= steps; step += 1) {
      if (token !== undefined) {
        await extra.sendNotification({ method: 'notifications/progress', params: { progressToken: token, progress: step, total: steps, message: `step ${step}` } });
      }
    }
    return text(`done in ${steps} steps`);
  },
);

server.registerTool('fail', { description: 'Fails as a tool.' }, () => ({ content: [{ type: 'text', text: 'the thing is broken' }], isError: true }));

server.registerTool('structured', { description: 'Structured content only.' }, () => ({ content: [], structuredContent: { temperature: 21.5, unit: 'C' } }));

server.registerTool('media', { description: 'An image, a resource link, embedded resources.' }, () => ({
  content: [
    { type: 'image', data: Buffer.from('0123456789').toString('base64'), mimeType: 'image/png' },
    { type: 'resource_link', uri: 'file:///tmp/report.txt', name: 'report' },
    { type: 'resource', resource: { uri: 'mem://note', text: 'embedded note' } },
    { type: 'resource', resource: { uri: 'mem://blob', mimeType: 'application/octet-stream', blob: Buffer.from('abcd').toString('base64') } },
  ],
}));

server.registerTool('add_tool', { description: 'Adds a tool (list_changed follows).', inputSchema: { name: z.string() } }, ({ name }) => {
  server.registerTool(name, { description: `added at run time` }, () => text(`${name} here`));
  return text(`added ${name}`);
});

server.registerTool('pid', { description: 'Its process id.', annotations: { readOnlyHint: true } }, () => text(String(process.pid)));

server.registerTool('env', { description: 'Its environment, as JSON.' }, () => text(JSON.stringify(process.env)));

server.registerTool('spawn_child', { description: 'Starts a grandchild process that never ends; answers its pid.' }, () => {
  const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1e9)'], { stdio: 'ignore' });
  return text(String(child.pid));
});

server.registerTool('noisy', { description: 'Writes lines to stderr.', inputSchema: { lines: z.number().int() } }, ({ lines }) => {
  for (let i = 0; i < lines; i += 1) console.error(`noise ${i}`);
  return text('noisy');
});

await server.connect(new StdioServerTransport());
console.error('fixture ready');
