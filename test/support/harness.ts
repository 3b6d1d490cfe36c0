import { z } from 'zod';
import {
  createRuntime,
  defineTool,
  sqliteStorage,
  withFaults,
  type AnyTool,
  type Runtime,
  type RuntimeOptions,
  type ScriptedStep,
  type SessionHandle,
  type StoredMessage,
  type UpdateEnvelope,
  scriptedModel,
} from '../../src/index.js';

/** A read tool that records what it was asked and answers with the file's name. */
export function readFileTool(log: string[] = []): AnyTool {
  return defineTool({
    name: 'read_file',
    description: 'Read a file',
    effect: 'read',
    input: z.object({ path: z.string() }),
    execute: async (args) => {
      log.push(`read_file ${args.path}`);
      return { status: 'succeeded', content: `contents of ${args.path}` };
    },
  });
}

/** A write tool; in `ask` mode it needs approval. */
export function writeFileTool(log: string[] = []): AnyTool {
  return defineTool({
    name: 'write_file',
    description: 'Write a file',
    effect: 'write',
    input: z.object({ path: z.string(), text: z.string() }),
    authorize: (args) => (args.path.startsWith('/etc') ? { decision: 'deny', reason: 'protected path' } : { decision: 'ask', paths: [args.path] }),
    execute: async (args, ctx) => {
      log.push(`write_file ${args.path} approved=${ctx.approvedPaths.join(',')}`);
      return { status: 'succeeded', content: `wrote ${args.path}` };
    },
  });
}

/** A tool that fails by throwing. */
export function failingTool(): AnyTool {
  return defineTool({
    name: 'flaky',
    description: 'Always fails',
    effect: 'read',
    input: z.object({}),
    execute: async () => {
      throw new Error('disk on fire');
    },
  });
}

/** A tool that runs until its signal aborts; `started` resolves when it begins. */
export function blockingTool() {
  let markStarted: () => void = () => undefined;
  const started = new Promise<void>((resolve) => (markStarted = resolve));
  const seen: { aborted: boolean } = { aborted: false };
  const tool = defineTool({
    name: 'long_job',
    description: 'Runs until cancelled',
    effect: 'read',
    input: z.object({}),
    execute: (_args, ctx) =>
      new Promise((resolve) => {
        markStarted();
        ctx.signal.addEventListener('abort', () => {
          seen.aborted = true;
          resolve({ status: 'cancelled', content: 'stopped' });
        });
      }),
  });
  return { tool, started, seen };
}

export interface Harness {
  runtime: Runtime;
  session: SessionHandle;
  model: ReturnType<typeof scriptedModel>;
  updates: UpdateEnvelope[];
  storage: ReturnType<typeof withFaults>;
}

export async function harness(
  steps: ScriptedStep[],
  options: Partial<RuntimeOptions> & { permissionMode?: 'ask' | 'auto' | 'read_only'; filename?: string } = {},
): Promise<Harness> {
  const storage = withFaults(options.storage ?? sqliteStorage({ filename: options.filename ?? ':memory:' }));
  const model = scriptedModel(steps);
  const runtime = await createRuntime({ model, tools: [readFileTool()], ...options, storage });
  const session = await runtime.createSession({ agent: 'default', permissionMode: options.permissionMode ?? 'ask' });
  const updates: UpdateEnvelope[] = [];
  session.updates$.subscribe((u) => updates.push(u));
  return { runtime, session, model, updates, storage };
}

/** Resolves on the first update that matches; rejects if the stream completes first. */
export function nextUpdate(session: SessionHandle, type: UpdateEnvelope['update']['type']): Promise<UpdateEnvelope> {
  return new Promise((resolve, reject) => {
    const sub = session.updates$.subscribe({
      next: (u) => {
        if (u.update.type === type) {
          sub.unsubscribe();
          resolve(u);
        }
      },
      complete: () => reject(new Error(`stream completed before ${type}`)),
    });
  });
}

export function types(updates: UpdateEnvelope[]): string[] {
  return updates.map((u) => u.update.type);
}

/** Starts a turn with one text part and waits for its outcome. */
export async function runTurn(session: SessionHandle, text: string, clientRequestId = `c-${text}`) {
  const started = await session.startTurn({ clientRequestId, input: [{ type: 'text', text }] });
  if (!started.ok) throw new Error(`turn refused: ${JSON.stringify(started.error)}`);
  return { turnId: started.turnId, outcome: await session.waitForTurn(started.turnId) };
}

/** Starts a turn and returns its id without waiting. */
export async function startTurn(session: SessionHandle, text: string, clientRequestId = `c-${text}`): Promise<string> {
  const started = await session.startTurn({ clientRequestId, input: [{ type: 'text', text }] });
  if (!started.ok) throw new Error(`turn refused: ${JSON.stringify(started.error)}`);
  return started.turnId;
}

const WORLD_STATE_OPENINGS = ['<user_project_context', '<project_instructions', '<available_skills', '<sandbox_policy>', 'The following ', 'The previously provided '];

/** Request messages without the world-state renders, for tests about the rest of the conversation. */
export function withoutWorldState<M extends { role: string; text?: string }>(messages: readonly M[]): M[] {
  return messages.filter((m) => !(m.role === 'user' && WORLD_STATE_OPENINGS.some((opening) => m.text?.startsWith(opening))));
}

/** Stored messages without world-state messages. */
export function withoutWorldStateMessages(messages: readonly StoredMessage[]): StoredMessage[] {
  return messages.filter((m) => !(m.message.role === 'user' && m.message.kind === 'world_state'));
}

/**
 * Makes a runtime look like a process that died: it stops renewing its leases and no longer counts
 * as alive in this process, so the next runtime on the same database takes its sessions over and
 * corrects them, as it would after a real crash (test/reliability/ kills real processes).
 */
export function crash(runtime: Runtime): void {
  runtime.ownership.stop();
}
