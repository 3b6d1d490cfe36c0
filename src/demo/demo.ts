/**
 * `npm run demo`: one scripted agent session on an SQLite file (.turnchart/demo.db), printing the
 * sequenced updates as they arrive — a plan, a read, an approval the demo grants, a tool error
 * handed back to the model, and the final answer.
 */
import { mkdir, readdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { z } from 'zod';
import { createRuntime, defineTool, scriptedModel, sqliteStorage, type UpdateEnvelope } from '../index.js';

const DB = join('.turnchart', 'demo.db');
const NOTE = join('.turnchart', 'demo-note.md');

const listFiles = defineTool({
  name: 'list_files',
  description: 'List the entries of a directory',
  effect: 'read',
  input: z.object({ dir: z.string() }),
  execute: async ({ dir }) => ({ status: 'succeeded', content: (await readdir(dir)).sort().join('\n') }),
});

const writeNote = defineTool({
  name: 'write_note',
  description: 'Write a markdown note',
  effect: 'write',
  input: z.object({ path: z.string(), text: z.string() }),
  authorize: ({ path }) => ({ decision: 'ask', paths: [path] }),
  execute: async ({ path, text }, { approvedPaths }) => {
    if (!approvedPaths.includes(path)) return { status: 'failed', content: `${path} was not approved` };
    await mkdir(dirname(path), { recursive: true });
    await writeFile(path, text);
    return { status: 'succeeded', content: `wrote ${text.length} characters to ${path}` };
  },
});

const runChecks = defineTool({
  name: 'run_checks',
  description: 'Run the project checks',
  effect: 'execute',
  input: z.object({ suite: z.string() }),
  execute: async ({ suite }) => {
    throw new Error(`suite '${suite}' does not exist`);
  },
});

const plan = (doing: number) => ({
  plan: ['look around', 'write a note', 'run the checks'].map((step, i) => ({
    step,
    status: i < doing ? ('completed' as const) : i === doing ? ('in_progress' as const) : ('pending' as const),
  })),
});

const model = scriptedModel([
  { text: 'I will plan this first.', toolCalls: [{ name: 'update_plan', args: plan(0) }] },
  { text: 'Looking at the project.', toolCalls: [{ name: 'list_files', args: { dir: '.' } }] },
  {
    text: 'Writing down what I found.',
    toolCalls: [{ name: 'update_plan', args: plan(1) }, { name: 'write_note', args: { path: NOTE, text: '# Demo\nturnchart was here.\n' } }],
  },
  { text: 'Now the checks.', toolCalls: [{ name: 'update_plan', args: plan(2) }, { name: 'run_checks', args: { suite: 'smoke' } }] },
  { reasoning: 'The suite name was wrong; I should say so rather than retry blindly.', text: 'The project is listed and the note is written. The checks could not run: the suite "smoke" does not exist.' },
]);

function describe(u: UpdateEnvelope): string {
  const x = u.update;
  switch (x.type) {
    case 'text_delta':
    case 'reasoning_delta':
      return JSON.stringify(x.text);
    case 'phase_changed':
      return x.phase;
    case 'tool_call_started':
    case 'tool_call_finished':
      return `${'name' in x ? `${x.name} ` : ''}${x.toolCallId} ${x.status}`;
    case 'permission_requested':
      return `${x.name} asks for approval${x.paths.length ? ` (${x.paths.join(', ')})` : ''}`;
    case 'permission_resolved':
      return x.decision;
    case 'plan_updated':
      return x.plan.plan.map((s) => `[${s.status === 'completed' ? 'x' : s.status === 'in_progress' ? '>' : ' '}] ${s.step}`).join('  ');
    case 'turn_finished':
      return JSON.stringify(x.outcome);
    default:
      return '';
  }
}

async function main(): Promise<void> {
  const runtime = await createRuntime({
    storage: sqliteStorage({ filename: DB }),
    model,
    tools: [listFiles, writeNote, runChecks],
    agents: { default: { systemPrompt: 'You are a careful project assistant.' } },
  });
  console.log(`turnchart demo — storage ${DB}; startup correction: ${JSON.stringify(runtime.correction)}\n`);
  // The workspace is this checkout: its layout (and an AGENTS.md, if there is one) reaches the model as world state.
  const session = await runtime.createSession({ agent: 'default', permissionMode: 'ask', workspaceDir: '.' });

  session.updates$.subscribe((u) => {
    console.log(`#${String(u.sequence).padStart(3)}  ${u.update.type.padEnd(20)} ${describe(u)}`);
    if (u.update.type === 'permission_requested') {
      const { toolCallId } = u.update;
      console.log('      (the demo grants this approval once)');
      void session.resolvePermission({ turnId: u.turnId, toolCallId, decision: 'allow_once' });
    }
  });

  const started = await session.startTurn({ clientRequestId: 'demo-1', input: [{ type: 'text', text: 'Look around, leave a note, run the checks.' }] });
  if (!started.ok) throw new Error(`turn refused: ${JSON.stringify(started.error)}`);
  const outcome = await session.waitForTurn(started.turnId);
  console.log(`\noutcome: ${JSON.stringify(outcome)}`);
  console.log(`model calls: ${model.requests.length}; the last request carried ${model.requests.at(-1)?.messages.length} messages`);
  const preview = await runtime.inspectContextWindow(session.id);
  console.log(
    `context window: ${preview.budget.estimatedInputTokens} input tokens estimated ` +
      `(system ${preview.budget.systemContextTokens}, conversation ${preview.budget.conversationTokens}, tools ${preview.budget.toolSurfaceTokens}); ` +
      `${preview.percentUsed}% of the auto-compact line (${preview.autoCompactTokenLimit})`,
  );
  await runtime.shutdown();
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
