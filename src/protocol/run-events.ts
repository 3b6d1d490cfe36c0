import { SPAWN_AGENT, SWITCH_AGENT, WAIT_AGENT } from './control-tool-names.js';
import type { TurnOutcome } from './outcome.js';
import type { SessionUpdate, UpdateEnvelope } from './updates.js';

/**
 * Issue 30: the seed's event names for a run (`GET /runs/{runId}/events`). The session stream keeps
 * its own names; this vocabulary is mapped from it by one table, `RUN_EVENT_TABLE`, which the README's
 * "Run events" section lists row by row (a test holds the two together).
 */
export type RunEventName =
  | 'run.started'
  | 'message.delta'
  | 'tool.started'
  | 'tool.completed'
  | 'tool.failed'
  | 'agent.switch'
  | 'agent.delegate.started'
  | 'agent.delegate.completed'
  | 'run.completed'
  | 'run.failed'
  | 'run.cancelled'
  | 'run.timed_out';

/**
 * Which tool a call is, for the table: the delegation control tools stand for the sub-agent's life,
 * not for a tool of their own; `switch_agent`'s success is its `agent_switched` update.
 */
type CallKind = 'spawn' | 'wait' | 'switch' | 'tool';

/** What a row is matched against: the update, and the kind of the tool call it is about (`tool` when not about one, or when its name was not seen). */
interface Mapped {
  update: SessionUpdate;
  call: CallKind;
}

export interface RunEventRule {
  /** The session update this row maps. */
  update: SessionUpdate['type'];
  /** The condition, in the README's words (`any` when absent): every such update. */
  when?: string;
  matches?: (mapped: Mapped) => boolean;
  event: RunEventName;
}

const finishedAs = (statuses: readonly TurnOutcome['status'][]) => ({ update }: Mapped) => update.type === 'turn_finished' && statuses.includes(update.outcome.status);
const succeeded = (update: SessionUpdate): boolean => update.type === 'tool_call_finished' && update.status === 'succeeded';

/**
 * The one table from session updates to run events: the first row that matches names the event;
 * an update no row matches (reasoning, phases, approvals, plans, the queue, guardrails, a resumed
 * turn's notice, the control tools' own call updates) has no run event.
 */
export const RUN_EVENT_TABLE: readonly RunEventRule[] = [
  { update: 'turn_started', event: 'run.started' },
  { update: 'text_delta', event: 'message.delta' },
  { update: 'tool_call_started', when: `\`${SPAWN_AGENT}\``, matches: ({ call }) => call === 'spawn', event: 'agent.delegate.started' },
  { update: 'tool_call_finished', when: `\`${WAIT_AGENT}\``, matches: ({ call }) => call === 'wait', event: 'agent.delegate.completed' },
  {
    update: 'tool_call_finished',
    when: `\`${SPAWN_AGENT}\` or \`${SWITCH_AGENT}\`, not succeeded`,
    matches: ({ update, call }) => (call === 'spawn' || call === 'switch') && !succeeded(update),
    event: 'tool.failed',
  },
  { update: 'tool_call_started', when: `a tool but \`${SPAWN_AGENT}\`, \`${WAIT_AGENT}\` and \`${SWITCH_AGENT}\``, matches: ({ call }) => call === 'tool', event: 'tool.started' },
  { update: 'tool_call_finished', when: 'such a tool, `succeeded`', matches: ({ update, call }) => call === 'tool' && succeeded(update), event: 'tool.completed' },
  { update: 'tool_call_finished', when: 'such a tool, any other status', matches: ({ call }) => call === 'tool', event: 'tool.failed' },
  { update: 'agent_switched', event: 'agent.switch' },
  { update: 'turn_finished', when: '`completed`', matches: finishedAs(['completed']), event: 'run.completed' },
  { update: 'turn_finished', when: '`failed`', matches: finishedAs(['failed']), event: 'run.failed' },
  { update: 'turn_finished', when: '`cancelled`', matches: finishedAs(['cancelled']), event: 'run.cancelled' },
  { update: 'turn_finished', when: '`timed_out`', matches: finishedAs(['timed_out']), event: 'run.timed_out' },
];

/** One run event: its name and its data (the envelope's place and the update's fields). */
export interface RunEvent {
  event: RunEventName;
  data: Record<string, unknown>;
}

/** The events that end a run's stream. */
export const RUN_END_EVENTS: ReadonlySet<RunEventName> = new Set(['run.completed', 'run.failed', 'run.cancelled', 'run.timed_out']);

/**
 * Maps one run's updates, in order, through the table. It remembers each call's tool by its
 * `tool_call_started` (the finish names only the call): a stream resumed after a call started
 * counts that call as any other tool.
 */
export class RunEventMapper {
  private readonly calls = new Map<string, CallKind>();

  constructor(private readonly runId: string) {}

  map(envelope: UpdateEnvelope): RunEvent | null {
    const { update } = envelope;
    if (update.type === 'tool_call_started') this.calls.set(update.toolCallId, kindOf(update.name));
    const call = 'toolCallId' in update ? (this.calls.get(update.toolCallId) ?? 'tool') : 'tool';
    const rule = RUN_EVENT_TABLE.find((row) => row.update === update.type && (row.matches?.({ update, call }) ?? true));
    if (!rule) return null;
    const place = { runId: this.runId, sessionId: envelope.sessionId, turnId: envelope.turnId, sequence: envelope.sequence, occurredAtMs: envelope.occurredAtMs };
    return { event: rule.event, data: { ...place, ...fieldsOf(update) } };
  }
}

function kindOf(name: string): CallKind {
  if (name === SPAWN_AGENT) return 'spawn';
  if (name === WAIT_AGENT) return 'wait';
  return name === SWITCH_AGENT ? 'switch' : 'tool';
}

/** The update's own fields; a run's end carries its outcome's, flattened (its status, and a failure's code). */
function fieldsOf(update: SessionUpdate): Record<string, unknown> {
  if (update.type === 'turn_finished') return outcomeFields(update.outcome);
  const { type: _type, ...fields } = update;
  return fields;
}

/** What a run's end event says of how it ended (usage stays with the turn's own update). */
function outcomeFields(outcome: TurnOutcome): Record<string, unknown> {
  switch (outcome.status) {
    case 'completed':
      return { status: outcome.status, finalText: outcome.finalText };
    case 'failed':
      return { status: outcome.status, errorCode: outcome.code, message: outcome.message };
    case 'timed_out':
      return { status: outcome.status, message: outcome.message };
    case 'cancelled':
      return { status: outcome.status };
  }
}
