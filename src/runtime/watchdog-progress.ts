import type { AnyActorRef } from 'xstate';
import { WATCHDOG } from '../../machines/stall-watchdog.machine.js';

const PROGRESS = { type: 'watchdog.progress' } as const;

type WithChildren = { status?: string; children?: Record<string, AnyActorRef | undefined> };

/**
 * Tells the running turn's no-progress watchdog that an update went out. Only sessions whose agent
 * has a `stallTimeoutMs` call this (text deltas never pass through the charts otherwise).
 */
export function reportProgress(session: AnyActorRef | null): void {
  const turn = (session?.getSnapshot() as WithChildren | undefined)?.children?.turn;
  const watchdog = (turn?.getSnapshot() as WithChildren | undefined)?.children?.[WATCHDOG];
  if ((watchdog?.getSnapshot() as WithChildren | undefined)?.status === 'active') watchdog!.send(PROGRESS);
}
