import type { Migration, MigrationProvider } from 'kysely';
import { initial } from './001_initial.js';
import { compactions } from './002_compactions.js';
import { service } from './003_service.js';
import { audit } from './004_audit.js';
import { tasks } from './005_tasks.js';
import { subagents } from './006_subagents.js';
import { guardrailTrackers } from './007_guardrail_trackers.js';
import { principals } from './008_principals.js';
import { quotas } from './009_quotas.js';
import { durableTurns } from './010_durable_turns.js';
import { turnTraceContext } from './011_turn_trace_context.js';
import { toolAttempts } from './012_tool_attempts.js';

/**
 * In-code rather than FileMigrationProvider: the package runs from `dist` or through tsx,
 * and a directory scan would see `.js` in one and `.ts` in the other.
 * Names sort alphabetically, which is the order the Migrator applies them.
 */
const migrations: Record<string, Migration> = {
  '001_initial': initial,
  '002_compactions': compactions,
  '003_service': service,
  '004_audit': audit,
  '005_tasks': tasks,
  '006_subagents': subagents,
  '007_guardrail_trackers': guardrailTrackers,
  '008_principals': principals,
  '009_quotas': quotas,
  '010_durable_turns': durableTurns,
  '011_turn_trace_context': turnTraceContext,
  '012_tool_attempts': toolAttempts,
};

export const migrationProvider: MigrationProvider = {
  async getMigrations() {
    return migrations;
  },
};
