import type { FinishTurnInput, SessionContext, SessionEffects } from '../../machines/session.machine.js';
import type { EffectHandlers } from './effect-port.js';
import type { TurnEnd } from '../../storage/session-storage.js';
import type { TurnOutcome } from '../protocol/outcome.js';
import { emit } from './session-env.js';
import type { TurnEffectDeps } from './turn-effects.js';

/** The session chart's effects: announcing a turn and closing it (RT-1, RT-9). */
export function sessionEffects(deps: TurnEffectDeps) {
  const { env: envOf, storage, trace, now } = deps;

  const finishTurn = async (input: FinishTurnInput): Promise<void> => {
    const env = envOf(input.sessionId);
    const end = turnEnd(input.outcome, now());
    env.preparedInputs.delete(input.turnId);
    if (env.openTurnRow !== input.turnId) return; // the first write never happened: nothing to close
    env.openTurnRow = null;
    trace.end(`turn:${input.turnId}`, { status: spanStatusOf(input.outcome), errorCode: end.errorCode, endedAtMs: end.finishedAtMs });
    try {
      await storage.endTurn(input.turnId, end);
    } catch (error) {
      // The row may still say `running`: the next turn closes it before its own first write.
      env.unclosedTurn = { turnId: input.turnId, end };
      throw error;
    }
  };

  return {
    handlers: { finishTurn } satisfies Pick<EffectHandlers<SessionEffects>, 'finishTurn'>,
    actions: {
      emitTurnStarted: ({ context }: { context: SessionContext }, params: { turnId: string; clientRequestId: string }) =>
        emit(envOf(context.sessionId), params.turnId, { type: 'turn_started', clientRequestId: params.clientRequestId }),
      emitPermissionRequested: (
        { context }: { context: SessionContext },
        params: { turnId: string; toolCallId: string; name: string; paths: string[] },
      ) =>
        emit(envOf(context.sessionId), params.turnId, {
          type: 'permission_requested',
          toolCallId: params.toolCallId,
          name: params.name,
          paths: params.paths,
        }),
      /** Runs as the session becomes idle, so a waiter that starts the next turn is not told Busy. */
      announceTurnFinished: ({ context }: { context: SessionContext }) => {
        const last = context.lastOutcome;
        if (!last) return;
        const env = envOf(context.sessionId);
        env.outcomes.set(last.turnId, last.outcome);
        emit(env, last.turnId, { type: 'turn_finished', outcome: last.outcome });
        const waiters = env.waiters.get(last.turnId) ?? [];
        env.waiters.delete(last.turnId);
        for (const resolve of waiters) resolve(last.outcome);
      },
    },
  };
}

function turnEnd(outcome: TurnOutcome, finishedAtMs: number): TurnEnd {
  switch (outcome.status) {
    case 'completed':
      return { status: 'completed', errorCode: null, errorMessage: null, finalText: outcome.finalText, finishedAtMs };
    case 'failed':
      return { status: 'failed', errorCode: outcome.code, errorMessage: outcome.message, finalText: null, finishedAtMs };
    case 'cancelled':
      return { status: 'cancelled', errorCode: null, errorMessage: null, finalText: null, finishedAtMs };
  }
}

function spanStatusOf(outcome: TurnOutcome) {
  return outcome.status === 'completed' ? 'succeeded' : outcome.status;
}
