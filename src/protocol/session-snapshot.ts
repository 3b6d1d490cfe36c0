import type { BusyPolicy, PermissionMode } from './commands.js';
import type { Plan } from './plan.js';
import type { SandboxView } from './sandbox.js';
import type { TurnOutcome } from './outcome.js';
import type { LiveToolCallStatus, QueuedTurnView, TurnPhase } from './updates.js';
import type { TokenUsage } from './usage.js';

/** What a reconnecting client reads first (RT-21): the session's settings and its running turn, folded from the update stream. */
export interface SessionSnapshot {
  /** 8: `sandbox` says what confines the session's commands (it was the literal 'none' in 7). */
  version: 8;
  sessionId: string;
  lastUpdateSequence: number;
  permissionMode: PermissionMode;
  busyPolicy: BusyPolicy;
  /** Turns waiting behind the running one, in the order they will start (RL-2). */
  queue: QueuedTurnView[];
  /** What confines the commands of the session's agent now, as its model is told. */
  sandbox: SandboxView;
  runtime: RuntimeView;
}

export interface LiveToolCall {
  toolCallId: string;
  name: string;
  status: LiveToolCallStatus;
}

export interface PendingApproval {
  toolCallId: string;
  name: string;
  paths: string[];
}

export type RuntimeView =
  | { kind: 'idle' }
  | {
      kind: 'running';
      turnId: string;
      clientRequestId: string;
      phase: TurnPhase;
      draftText: string;
      draftReasoning: string;
      toolCalls: LiveToolCall[];
      pendingApproval: PendingApproval | null;
      plan: Plan | null;
      /** Tokens the turn's model calls have cost so far, once one reported any. */
      usage?: TokenUsage;
    }
  | { kind: 'terminal'; turnId: string; outcome: TurnOutcome; plan: Plan | null };
