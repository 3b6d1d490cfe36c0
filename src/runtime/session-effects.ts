import type { SessionContext, SessionEvent } from '../../machines/session.machine.js';
import type { ApprovalAnswerParams, FinishTurnInput, FinishTurnOutput, PermissionRequestParams, QueuedTurnParams, SessionEffects } from '../../machines/session.effects.js';
import { abandonTurnEffects } from './effect-port.js';
import type { EffectHandlers } from './effect-port.js';
import { FencedWriteError, type SpanEnd, type TurnEnd } from '../../storage/session-storage.js';
import type { TurnOutcome } from '../protocol/outcome.js';
import { emit, type SessionEnv } from './session-env.js';
import { abandonStartedReads } from './parallel-reads.js';
import { withTurnMeter } from './turn-meter.js';
import type { TurnEffectDeps } from './turn-effects.js';

type Args = { context: SessionContext; event: SessionEvent };

/** Failures a guardrail decided (GR-1, GR-2, RL-4), named on the turn's span (issue 27). */
const GUARDRAIL_FAILURES: ReadonlySet<string> = new Set(['doom_loop', 'mistake_limit', 'stalled', 'max_model_calls', 'hook_failed', 'hook_timeout', 'budget_exhausted']);

export interface SessionEffectDeps extends TurnEffectDeps {
  /** Gives up the session's lease with its last update sequence; writes nothing for a session another owner took. */
  releaseLease: (sessionId: string) => Promise<void>;
  /** The session's lease is gone (a write was fenced): it is parked here, for its new owner. */
  ownedElsewhere: (sessionId: string) => void;
}

/** The session chart's effects: announcing a turn, queueing and closing it (RT-1, RT-9, RL-2), and closing the session. */
export function sessionEffects(deps: SessionEffectDeps) {
  const { env: envOf, storage, trace, now } = deps;

  const finishTurn = async (input: FinishTurnInput): Promise<FinishTurnOutput> => {
    const env = envOf(input.sessionId);
    // The session's guardrail trackers go into the turn's terminal write: a restart starts from them (GR-2a).
    const end: TurnEnd = { ...turnEnd(input.outcome, now()), trackers: input.trackers };
    env.turns.preparedInputs.delete(input.turnId);
    env.turns.stored.forget(input.turnId);
    abandonStartedReads(env);
    if (env.turns.openTurnRow !== input.turnId) return { stored: false }; // the first write never happened: nothing to close
    env.turns.openTurnRow = null;
    const { outcome } = input;
    const guardrail = outcome.status === 'completed' ? outcome.stoppedBy : outcome.status === 'failed' && GUARDRAIL_FAILURES.has(outcome.code) ? outcome.code : undefined;
    // The turn's meter is read here, before `announceTurnFinished` folds it into the outcome and forgets it.
    const meter = env.turns.turnMeters.get(input.turnId);
    const usage = outcome.usage ?? meter?.usage;
    const facts = { ...(usage && { usage }), ...(guardrail && { guardrails: [guardrail] }), ...(meter?.compactions && { compactions: meter.compactions }) };
    const spanEnd: SpanEnd = { status: spanStatusOf(outcome), errorCode: end.errorCode, endedAtMs: end.finishedAtMs, facts };
    trace.end(`turn:${input.turnId}`, spanEnd);
    // Issue 26: a resumed turn's span here is its own (the first one was settled `outcome_unknown` by the correction).
    if (env.turns.resumedSpan === input.turnId) {
      env.turns.resumedSpan = null;
      trace.end(`turn:${input.turnId}:resumed`, spanEnd);
    }
    try {
      await storage.endTurn(input.turnId, end, env.config.fence);
    } catch (error) {
      // Issue 26: another host holds the session now. The turn is its to end or go on with; this one parks.
      if (error instanceof FencedWriteError) {
        deps.ownedElsewhere(input.sessionId);
        return { stored: false, ownedElsewhere: true };
      }
      // The row may still say `running`: the next turn closes it before its own first write.
      env.turns.unclosedTurn = { turnId: input.turnId, end };
      throw error;
    }
    return { stored: true };
  };

  /** The queued row is written at once; the turn's durability follows it, and starting the turn waits for it. */
  const storeQueuedTurn = ({ context, event }: Args) => {
    if (event.type !== 'session.start_turn') return;
    const env = envOf(context.sessionId);
    const prepared = env.turns.preparedInputs.get(event.turnId);
    if (!prepared) return;
    prepared.fromQueue = true;
    const write = storage.enqueueTurn(
      {
        id: event.turnId,
        sessionId: env.config.id,
        clientRequestId: prepared.clientRequestId,
        runId: prepared.runId,
        trigger: prepared.trigger,
        input: prepared.messages,
        queuedAtMs: now(),
        principal: env.config.principal,
        traceParent: prepared.traceParent,
      },
      env.config.fence,
    );
    env.turns.stored.follow(event.turnId, write);
  };

  const settleCancelledQueuedTurn = ({ context }: Args, params: QueuedTurnParams) => {
    const env = envOf(context.sessionId);
    const { turnId } = params;
    const queuedInput = env.turns.stored.wait(turnId);
    env.turns.preparedInputs.delete(turnId);
    env.turns.stored.forget(turnId);
    // Only a queued row that was written needs its cancel written; one whose write failed never existed.
    const cancel = queuedInput.then(
      () => storage.cancelQueuedTurn(turnId, now(), env.config.fence),
      () => undefined,
    );
    cancel.catch(() => undefined);
    env.turns.cancelWrites.set(turnId, cancel);
    settle(env, turnId, { status: 'cancelled' });
  };

  /**
   * Issue 26: the request is stored with its expiry, counted from now; a request stored before (by an
   * earlier host, or the same call asking again) keeps its own, which the call's deadline already used.
   * An answer's write follows it, so it always finds the row.
   */
  const recordApprovalRequest = (env: SessionEnv, params: PermissionRequestParams): Promise<void> => {
    const requestedAtMs = now();
    const timeout = env.config.agent.approvalTimeoutMs;
    if (!env.turns.approvalExpiries.has(params.toolCallId)) env.turns.approvalExpiries.set(params.toolCallId, timeout === null ? null : requestedAtMs + timeout);
    const write = storage.requestApproval({
      turnId: params.turnId,
      toolCallId: params.toolCallId,
      sessionId: env.config.id,
      toolName: params.name,
      paths: params.paths,
      requestedAtMs,
      expiresAtMs: env.turns.approvalExpiries.get(params.toolCallId) ?? null,
      decision: null,
      answeredBy: null,
    });
    write.catch(() => undefined);
    env.turns.approvalRequests.set(params.toolCallId, write);
    return write;
  };

  return {
    handlers: { finishTurn, closeSession: ({ sessionId }) => deps.releaseLease(sessionId) } satisfies Pick<EffectHandlers<SessionEffects>, 'finishTurn' | 'closeSession'>,
    actions: {
      emitTurnStarted: ({ context }: Args) => {
        const turn = context.activeTurn;
        if (turn) emit(envOf(context.sessionId), turn.turnId, { type: 'turn_started', clientRequestId: turn.clientRequestId });
      },
      emitPermissionRequested: ({ context }: Args, params: PermissionRequestParams) => {
        const env = envOf(context.sessionId);
        const stored = recordApprovalRequest(env, params);
        const announce = () => {
          if (env.output.updates.isSealed) return;
          emit(env, params.turnId, { type: 'permission_requested', toolCallId: params.toolCallId, name: params.name, paths: params.paths });
        };
        // Issue 26: nobody can answer a request before it is stored — a host dying then would lose the answer
        // (the next owner would not know the call was waiting). The session already takes the answer;
        // only the announcement waits. A call answered already (a held answer) is announced at once, before its answer.
        if (Object.hasOwn(context.heldAnswers, params.toolCallId)) announce();
        else void stored.then(announce, announce);
      },
      /** Issue 26: the answer is stored before the command that gave it is answered (the handle waits for the write). */
      storeApprovalAnswer: ({ context }: Args, params: ApprovalAnswerParams) => {
        const env = envOf(context.sessionId);
        const answer = {
          turnId: params.turnId,
          toolCallId: params.toolCallId,
          decision: params.decision,
          principal: params.principal ?? env.config.principal,
          answeredAtMs: now(),
        };
        // After the request's own write (a failed one too: the row may exist from an earlier host).
        const requested = env.turns.approvalRequests.get(params.toolCallId) ?? Promise.resolve();
        const write = requested.catch(() => undefined).then(() => storage.answerApproval(answer));
        write.catch(() => undefined);
        env.turns.answerWrites.set(params.toolCallId, write);
      },
      storeCancelRequest: ({ context }: Args) => {
        const turnId = context.activeTurn?.turnId;
        if (turnId) storage.requestCancel(turnId, now()).catch(() => undefined);
      },
      emitTurnResumed: ({ context }: Args) => {
        const turn = context.activeTurn;
        if (!turn || context.resuming === null) return;
        const env = envOf(context.sessionId);
        const fromSequence = env.turns.resumed?.fromSequence ?? env.output.updates.lastSequence + 1;
        emit(env, turn.turnId, { type: 'turn_resumed', clientRequestId: turn.clientRequestId, fromSequence, reason: context.resuming });
      },
      abandonTurnEffects: (args: Args & Parameters<typeof abandonTurnEffects>[0]) => {
        abandonStartedReads(envOf(args.context.sessionId));
        abandonTurnEffects(args);
      },
      emitQueueUpdated: ({ context, event }: Args) => {
        const turnId = 'turnId' in event ? event.turnId : (context.activeTurn?.turnId ?? '');
        emit(envOf(context.sessionId), turnId, { type: 'queue_updated', queue: context.queue.map((q) => ({ turnId: q.turnId, clientRequestId: q.clientRequestId })) });
      },
      storeQueuedTurn,
      settleCancelledQueuedTurn,
      /** Runs as the session becomes idle, so a waiter that starts the next turn is not told Busy. */
      announceTurnFinished: ({ context }: Args) => {
        const last = context.lastOutcome;
        if (!last) return;
        const env = envOf(context.sessionId);
        const outcome = withTurnMeter(env, last.turnId, last.outcome);
        emit(env, last.turnId, { type: 'turn_finished', outcome });
        settle(env, last.turnId, outcome);
      },
    },
  };
}

/** Records a turn's outcome and tells everyone waiting for it. */
function settle(env: SessionEnv, turnId: string, outcome: TurnOutcome): void {
  env.turns.outcomes.set(turnId, outcome);
  const waiters = env.turns.waiters.get(turnId) ?? [];
  env.turns.waiters.delete(turnId);
  for (const resolve of waiters) resolve(outcome);
}

function turnEnd(outcome: TurnOutcome, finishedAtMs: number): TurnEnd {
  switch (outcome.status) {
    case 'completed':
      // A guardrail that stopped the turn early is kept in the code column, free on a completed row: no migration.
      return { status: 'completed', errorCode: outcome.stoppedBy ?? null, errorMessage: null, finalText: outcome.finalText, finishedAtMs };
    case 'failed':
      return { status: 'failed', errorCode: outcome.code, errorMessage: outcome.message, finalText: null, finishedAtMs };
    case 'cancelled':
      return { status: 'cancelled', errorCode: null, errorMessage: null, finalText: null, finishedAtMs };
    case 'timed_out':
      return { status: 'timed_out', errorCode: 'run_timeout', errorMessage: outcome.message, finalText: null, finishedAtMs };
  }
}

function spanStatusOf(outcome: TurnOutcome) {
  if (outcome.status === 'completed') return 'succeeded';
  return outcome.status === 'timed_out' ? 'cancelled' : outcome.status;
}
