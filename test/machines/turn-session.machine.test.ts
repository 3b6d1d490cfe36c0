import { createActor, toPromise } from 'xstate';
import { describe, expect, it } from 'vitest';
import { sessionMachine } from '../../machines/session.machine.js';
import { approvalBatchAction, turnMachine } from '../../machines/turn.machine.js';
import type { SkipCallsInput } from '../../machines/turn.effects.js';
import { FRESH_TRACKERS } from '../../machines/guardrails.js';
import type { ModelResponse } from '../../src/protocol/model.js';
import { hostWithPort, never, stubPort, toolCallStubs } from './stubs.js';

/** The turn chart with stub effects: a model that always asks for one read, with new arguments each time. */
function turnWithStubs() {
  let calls = 0;
  const phases: string[] = [];
  const tool = toolCallStubs();
  const machine = turnMachine.provide({
    actors: { toolCall: tool.machine },
    guards: { mailboxHasMessages: () => false, holdRequested: () => false, callsReadInParallel: () => false, nextCallsReadInParallel: () => false, opensApprovalBatch: () => false, nextOpensApprovalBatch: () => false },
    actions: {
      emitPhase: (_, params) => phases.push(params.phase),
      discardDraft: () => undefined,
      cancelChildren: () => undefined,
    },
  });
  const handlers = {
    ...tool.handlers,
    beginTurn: async () => undefined,
    prepareRequest: async () => ({ overLine: false }),
    writeAssistant: async () => undefined,
    skipToolCalls: async () => undefined,
    callModel: async (): Promise<ModelResponse> => {
      calls += 1;
      return { text: `step ${calls}`, reasoning: '', toolCalls: [{ id: `c${calls}`, name: 'read_file', argumentsText: `{"path":"f${calls}"}` }] };
    },
  };
  return { machine, handlers, phases, calls: () => calls };
}

describe('turn chart through .provide() (RT-8, RT-10)', () => {
  it('loops model → tools → model and fails max_model_calls when the limit is reached', async () => {
    const t = turnWithStubs();
    const input = { sessionId: 's', turnId: 't', limits: { maxModelCalls: 4, doomLoopThreshold: 3 }, trackers: FRESH_TRACKERS };
    const actor = createActor(hostWithPort(t.machine, input, t.handlers));
    const done = toPromise(actor);
    actor.start();
    expect(await done).toMatchObject({ outcome: { status: 'failed', code: 'max_model_calls' } });
    expect(t.calls()).toBe(4);
    expect(t.phases).toEqual(['starting', ...Array(4).fill(['running_model', 'running_tools']).flat(), 'failed']);
  });
});

describe('turn chart: an approval batch whose call crashes (issue 30, RT-12)', () => {
  it('a tool-call actor that crashes while its batch is cleared: every call of the batch, from the first, is skipped with a result', async () => {
    const tool = toolCallStubs();
    // The second call's actor throws as it starts: the first is held (cleared, no result yet).
    const crashing = tool.machine.provide({
      actions: {
        startSpan: ({ context }) => {
          if (context.call.id === 'c2') throw new Error('boom');
        },
      },
    });
    const skipped: string[][] = [];
    const machine = turnMachine.provide({
      actors: { toolCall: crashing },
      guards: { mailboxHasMessages: () => false, holdRequested: () => false, callsReadInParallel: () => false, nextCallsReadInParallel: () => false, opensApprovalBatch: () => true, nextOpensApprovalBatch: () => false },
      actions: { emitPhase: () => undefined, discardDraft: () => undefined, cancelChildren: () => undefined, openApprovalBatch: approvalBatchAction(() => 2), startClearedCall: () => undefined },
    });
    const handlers = {
      ...tool.handlers,
      beginTurn: async () => undefined,
      prepareRequest: async () => ({ overLine: false }),
      writeAssistant: async () => undefined,
      skipToolCalls: async (input: SkipCallsInput) => void skipped.push(input.calls.map((c) => c.id)),
      callModel: async (): Promise<ModelResponse> => ({
        text: 'two',
        reasoning: '',
        toolCalls: ['c1', 'c2'].map((id) => ({ id, name: 'read_file', argumentsText: `{"path":"${id}"}` })),
      }),
    };
    const input = { sessionId: 's', turnId: 't', limits: { maxModelCalls: 4, doomLoopThreshold: 3 }, trackers: FRESH_TRACKERS };
    const actor = createActor(hostWithPort(machine, input, handlers));
    const done = toPromise(actor);
    actor.start();
    expect(await done).toMatchObject({ outcome: { status: 'failed', code: 'tool_call_crashed' } });
    expect(skipped).toEqual([['c1', 'c2']]);
    expect(tool.written).toEqual([]);
  });
});

describe('session chart guards (XS-3, RT-1)', () => {
  const stubTurn = turnMachine.provide({
    guards: { mailboxHasMessages: () => false, holdRequested: () => false, callsReadInParallel: () => false, nextCallsReadInParallel: () => false, opensApprovalBatch: () => false, nextOpensApprovalBatch: () => false },
    actions: { emitPhase: () => undefined, discardDraft: () => undefined, cancelChildren: () => undefined },
  });
  // The turn's first write never finishes, so the session stays `running` while the guards are probed.
  const machine = sessionMachine.provide({
    actors: { turn: stubTurn, effectPort: stubPort({ beginTurn: never, finishTurn: async () => undefined }) },
    actions: {
      emitTurnStarted: () => undefined,
      announceTurnFinished: () => undefined,
      emitPermissionRequested: () => undefined,
      storeCancelRequest: () => undefined,
      storeApprovalAnswer: () => undefined,
    },
  });
  const start = (reloadRequired: boolean) => {
    const actor = createActor(machine, {
      input: { sessionId: 's', limits: { maxModelCalls: 20, doomLoopThreshold: 3, runTimeoutMs: null }, accepted: { old: 'turn-old' }, reloadRequired, busyPolicy: 'reject', queue: [], trackers: FRESH_TRACKERS },
    });
    actor.start();
    const send = (clientRequestId: string, turnId: string, commandId: string) => {
      actor.send({ type: 'session.start_turn', commandId, clientRequestId, turnId });
      return actor.getSnapshot().context.reply;
    };
    return { actor, send };
  };

  it('decides in order: reload required, duplicate request, busy, accept', () => {
    const reload = start(true);
    expect(reload.send('old', 't1', 'a')).toEqual({ commandId: 'a', command: 'session.start_turn', result: { ok: false, error: { code: 'ReloadRequired' } } });
    const s = start(false);
    expect(s.send('old', 't1', 'a')).toEqual({ commandId: 'a', command: 'session.start_turn', result: { ok: true, turnId: 'turn-old' } });
    expect(s.actor.getSnapshot().value).toBe('idle');
    expect(s.send('new', 't2', 'b')).toEqual({ commandId: 'b', command: 'session.start_turn', result: { ok: true, turnId: 't2' } });
    expect(s.actor.getSnapshot().matches('running')).toBe(true);
    expect(s.send('new', 't3', 'c')).toEqual({ commandId: 'c', command: 'session.start_turn', result: { ok: true, turnId: 't2' } });
    expect(s.send('other', 't4', 'd')).toEqual({ commandId: 'd', command: 'session.start_turn', result: { ok: false, error: { code: 'Busy', turnId: 't2' } } });
    s.actor.send({ type: 'session.require_reload' });
    expect(s.send('other', 't5', 'e')).toEqual({ commandId: 'e', command: 'session.start_turn', result: { ok: false, error: { code: 'ReloadRequired' } } });
  });

  it('forwards cancel only for the active turn', () => {
    const s = start(false);
    s.send('new', 't2', 'b');
    s.actor.send({ type: 'session.cancel_turn', commandId: 'x', turnId: 'other' });
    expect(s.actor.getSnapshot().context.reply).toEqual({ commandId: 'x', command: 'session.cancel_turn', result: { ok: false, error: { code: 'TurnNotActive' } } });
    s.actor.send({ type: 'session.cancel_turn', commandId: 'y', turnId: 't2' });
    expect(s.actor.getSnapshot().context.reply).toEqual({ commandId: 'y', command: 'session.cancel_turn', result: { ok: true } });
  });
});
