import { z } from 'zod';
import { expect } from 'vitest';
import { createRuntime, defineTool, scriptedModel, type ModelRequest, type Runtime, type ScriptedStep, type SessionHandle, type SessionStorage, type StoredMessage, type WaitResult } from '../../src/index.js';
import { gatedStep } from '../support/host.js';

/**
 * The turn the fault-injection cases break: the model's first reply (held until the test releases
 * it) calls a tool with a side effect, the reply to the tool's result ends the turn, and the turn
 * after the fault gets its own answer. The model answers from the request, so it gives the same
 * answers wherever the fault cut the first turn short. The checks are the same for every fault.
 */
export interface FaultTurn {
  runtime: Runtime;
  session: SessionHandle;
  /** Resolves once the first model call has started (and is held). */
  reached: Promise<void>;
  release(): void;
  /** How often the tool's side effect ran. */
  toolRuns(): number;
}

const NEXT_TURN = 'and now?';

export async function faultTurn(storage: SessionStorage): Promise<FaultTurn> {
  let runs = 0;
  const note = defineTool({
    name: 'note',
    description: 'records a note (a side effect)',
    effect: 'read',
    input: z.object({}),
    execute: async () => {
      runs += 1;
      return { status: 'succeeded', content: 'noted' };
    },
  });
  const gate = gatedStep({ text: 'noting', toolCalls: [{ name: 'note', args: {} }] });
  const answer = (request: ModelRequest): ScriptedStep => {
    const last = request.messages.at(-1);
    if (last?.role === 'tool') return { text: 'done' };
    if (last?.role === 'user' && last.text === NEXT_TURN) return { text: 'after the fault' };
    return gate.step;
  };
  const model = scriptedModel(Array.from({ length: 4 }, (): ScriptedStep => (request, options) => {
    const step = answer(request);
    return typeof step === 'function' ? step(request, options) : step;
  }));
  const runtime = await createRuntime({ storage, model, tools: [note], warn: () => undefined });
  const session = await runtime.createSession({ permissionMode: 'auto' });
  return { runtime, session, reached: gate.reached, release: gate.release, toolRuns: () => runs };
}

/** Starts the turn the fault will land in. */
export async function startFaultTurn(turn: FaultTurn): Promise<string> {
  const started = await turn.session.startTurn({ clientRequestId: 'under-fault', input: [{ type: 'text', text: 'note it' }] });
  if (!started.ok) throw new Error(`turn refused: ${JSON.stringify(started.error)}`);
  return started.turnId;
}

/** The turn ended typed: it completed, or failed `persistence_error` when a write could not be made. */
export function expectTypedEnd(outcome: WaitResult, allowed: readonly ('completed' | 'persistence_error')[]): void {
  const ending = outcome.status === 'completed' ? 'completed' : outcome.status === 'failed' ? outcome.code : outcome.status;
  expect(allowed as readonly string[], `the turn ended ${JSON.stringify(outcome)}`).toContain(ending);
}

/** Everything stored before the fault is still there, in order, once; nothing was stored twice. */
export function expectNothingLost(before: StoredMessage[], after: StoredMessage[]): void {
  expect(after.slice(0, before.length)).toEqual(before);
  expect(new Set(after.map((m) => m.id)).size).toBe(after.length);
}

/** After the fault the session takes a turn that completes, and no turn is left running. */
export async function expectNextTurnWorks(turn: FaultTurn, storage: SessionStorage): Promise<void> {
  const started = await turn.session.startTurn({ clientRequestId: 'after-fault', input: [{ type: 'text', text: NEXT_TURN }] });
  expect(started).toMatchObject({ ok: true });
  expect(await turn.session.waitForTurn(started.ok ? started.turnId : '')).toEqual({ status: 'completed', finalText: 'after the fault' });
  expect((await storage.listTurns(turn.session.id)).map((t) => t.status)).not.toContain('running');
  expect(turn.toolRuns()).toBeLessThanOrEqual(1);
}

/** The turn's row says how it ended, as its outcome did (a closing write that failed was made before the next turn). */
export async function expectStoredAs(storage: SessionStorage, turnId: string, outcome: WaitResult): Promise<void> {
  const row = await storage.getTurn(turnId);
  expect(row?.status).toBe(outcome.status);
  if (outcome.status === 'failed') expect(row?.errorCode).toBe(outcome.code);
}
