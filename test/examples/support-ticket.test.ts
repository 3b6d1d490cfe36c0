import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createActor, waitFor } from 'xstate';
import { createRuntime, scriptedModel, sqliteStorage, workspaceTools, type Runtime } from '../../src/index.js';
import { ticketMachine } from '../../examples/support-ticket.js';

let runtime: Runtime | undefined;
let dir: string | undefined;
afterEach(async () => {
  await runtime?.shutdown();
  runtime = undefined;
  if (dir) await rm(dir, { recursive: true, force: true });
  dir = undefined;
});

/** A runtime on a SQLite file whose scripted agent writes `refund.md` (a write: it asks first), then says so. */
async function desk() {
  dir = await mkdtemp(path.join(os.tmpdir(), 'turnchart-ticket-'));
  const workspace = path.join(dir, 'workspace');
  const storage = sqliteStorage({ filename: path.join(dir, 'tickets.db') });
  const model = scriptedModel([
    { text: 'I will record the refund', toolCalls: [{ id: 'w1', name: 'write_file', args: { path: 'refund.md', content: 'refund order 42' } }] },
    { text: 'Refund recorded in refund.md' },
  ]);
  const { mkdir } = await import('node:fs/promises');
  await mkdir(workspace);
  runtime = await createRuntime({ storage, model, tools: workspaceTools({ root: workspace }) });
  const ticket = createActor(ticketMachine.provide({ actors: { agent: runtime.sessionLogic } }), {
    input: { ticketId: 't-42', question: 'Please refund order 42' },
  });
  ticket.start();
  return { ticket, storage, refund: path.join(workspace, 'refund.md'), runtime };
}

async function awaitingHuman(ticket: Awaited<ReturnType<typeof desk>>['ticket']) {
  ticket.send({ type: 'ASSIGN_TO_AGENT' });
  const waiting = await waitFor(ticket, (s) => s.matches({ handling: 'awaiting_human' }));
  expect(waiting.context.pending).toMatchObject({ tool: 'write_file', args: { path: 'refund.md', content: 'refund order 42' }, paths: ['refund.md'] });
  return waiting.context.pending!;
}

describe('examples/support-ticket.ts: a host machine that embeds a session', () => {
  it('triage → agent_working → awaiting_human → resolved: the human approves, the agent writes and answers', async () => {
    const { ticket, storage, refund } = await desk();
    expect(ticket.getSnapshot().value).toBe('triage');
    const pending = await awaitingHuman(ticket);
    expect(existsSync(refund)).toBe(false);

    ticket.send({ type: 'HUMAN_APPROVED' });
    const done = await waitFor(ticket, (s) => s.status === 'done');
    expect(done.value).toBe('resolved');
    expect(done.output).toEqual({ outcome: { status: 'completed', finalText: 'Refund recorded in refund.md' }, error: null });
    expect(await readFile(refund, 'utf8')).toBe('refund order 42');
    expect(await storage.getTurn(pending.turnId)).toMatchObject({ status: 'completed', clientRequestId: 'ticket-t-42' });
  });

  it('the human denies: the turn fails permission_denied, the file is never written', async () => {
    const { ticket, storage, refund } = await desk();
    const pending = await awaitingHuman(ticket);
    ticket.send({ type: 'HUMAN_DENIED' });
    const done = await waitFor(ticket, (s) => s.status === 'done');
    expect(done.value).toBe('resolved');
    expect(done.output?.outcome).toMatchObject({ status: 'failed', code: 'permission_denied' });
    expect(existsSync(refund)).toBe(false);
    expect(await storage.getTurn(pending.turnId)).toMatchObject({ status: 'failed', errorCode: 'permission_denied' });
  });

  it('the customer withdraws while the human decides: the turn is cancelled and stored so', async () => {
    const { ticket, storage, refund } = await desk();
    const pending = await awaitingHuman(ticket);
    ticket.send({ type: 'CUSTOMER_WITHDREW' });
    const done = await waitFor(ticket, (s) => s.status === 'done');
    expect(done.output?.outcome).toEqual({ status: 'cancelled' });
    expect(existsSync(refund)).toBe(false);
    expect(await storage.getTurn(pending.turnId)).toMatchObject({ status: 'cancelled' });
    const results = (await storage.listMessages(pending.sessionId)).flatMap((m) => (m.message.role === 'tool' ? [m.message.status] : []));
    expect(results).toEqual(['cancelled']);
  });

  it('leaving the state that invokes the session closes it, releasing its lease', async () => {
    const { ticket, runtime: rt } = await desk();
    const pending = await awaitingHuman(ticket);
    expect(rt.isOpen(pending.sessionId)).toBe(true);
    ticket.stop();
    await waitForClosed(rt, pending.sessionId);
    const reopened = await rt.openSession(pending.sessionId);
    expect(await reopened.waitForTurn(pending.turnId)).toMatchObject({ status: 'failed', code: 'actor_stopped' });
  });

  it('README shows the example exactly as examples/support-ticket.ts', async () => {
    const [readme, example] = await Promise.all([readFile('README.md', 'utf8'), readFile('examples/support-ticket.ts', 'utf8')]);
    expect(readme).toContain('```ts\n' + example + '```');
  });
});

async function waitForClosed(rt: Runtime, sessionId: string): Promise<void> {
  if (!rt.isOpen(sessionId)) return;
  await new Promise<void>((resolve) => {
    const sub = rt.sessionClosed$.subscribe((id) => {
      if (id !== sessionId) return;
      sub.unsubscribe();
      resolve();
    });
  });
}
