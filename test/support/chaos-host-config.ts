/**
 * The configuration file (`--config`) of the hosts in the turn chaos runs (test/support/turn-chaos.ts).
 * The default agent gets two tools that append one line per execution to the ledger file named by
 * TURNCHART_CHAOS_LEDGER — session, turn, tool call — and then hold for the `holdMs` the model asked,
 * so a kill can land inside a tool after its side effect. Neither is idempotent: a call that started
 * must never run again. `ledger_write` is allowed by a rule; `ledger_approved` is a write the `ask`
 * mode asks about. The per-principal quotas (every request here is the one local principal) are set
 * above the run's load: they are not what is tested.
 *
 * Only types are imported from the sources: the host loads this file through tsx, and importing the
 * package's code would compile all of it at every host start.
 */
import { appendFileSync } from 'node:fs';
import { setTimeout as delay } from 'node:timers/promises';
import { z } from 'zod';
import type { TurnchartConfig } from '../../src/index.js';
import type { Tool } from '../../src/tools/define-tool.js';

const LEDGER = process.env.TURNCHART_CHAOS_LEDGER;
if (!LEDGER) throw new Error('TURNCHART_CHAOS_LEDGER must name the ledger file');

const input = z.object({ tag: z.string(), step: z.number().int().min(1), holdMs: z.number().int().min(0).max(10_000) });

/** One ledger line as written (JSON). */
export interface LedgerLine {
  tool: string;
  sessionId: string;
  turnId: string;
  toolCallId: string;
  tag: string;
  step: number;
  pid: number;
  /** Date.now() as the tool ran. */
  at: number;
}

function ledgerTool(name: string, description: string): Tool<typeof input> {
  return {
    name,
    description,
    effect: 'write',
    idempotent: false,
    input,
    execute: async ({ tag, step, holdMs }, ctx) => {
      const line: LedgerLine = { tool: name, sessionId: ctx.sessionId, turnId: ctx.turnId, toolCallId: ctx.toolCallId, tag, step, pid: process.pid, at: Date.now() };
      // One write with O_APPEND: lines of concurrent hosts never interleave.
      appendFileSync(LEDGER!, `${JSON.stringify(line)}\n`);
      try {
        await delay(holdMs, undefined, { signal: ctx.signal });
      } catch {
        return { status: 'cancelled', content: `cancelled step ${step}` };
      }
      return { status: 'succeeded', content: `ok step ${step}` };
    },
  };
}

const config: TurnchartConfig = {
  agents: {
    default: {
      description: 'the chaos agent',
      instructions: 'Do the steps the user asks for, one tool call at a time.',
      tools: [ledgerTool('ledger_write', 'appends a step to the ledger'), ledgerTool('ledger_approved', 'appends a step to the ledger, once approved')],
    },
  },
  permissions: { ledger_write: 'allow' },
  maxSessionsPerPrincipal: 100_000,
  maxRunningTurnsPerPrincipal: 100_000,
  turnsPerMinutePerPrincipal: 100_000,
  maxStreamsPerPrincipal: 100_000,
};

export default config;
