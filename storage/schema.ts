import type { ColumnType } from 'kysely';

/**
 * Epoch milliseconds. Stored as `bigint` so PostgreSQL does not overflow int4 in 2038;
 * node-postgres returns int8 as a string to avoid precision loss, SQLite returns a number.
 * Rows are always read through `toMs` so callers only ever see numbers.
 */
type EpochMs = ColumnType<number | string, number, number>;
type NullableEpochMs = ColumnType<number | string | null, number | null, number | null>;

export interface SessionsTable {
  id: string;
  agent: string;
  permission_mode: string;
  workspace_dir: string | null;
  created_at_ms: EpochMs;
  busy_policy: ColumnType<string, string | undefined, string>;
  update_sequence: ColumnType<number | string, number | undefined, number>;
  owner_id: string | null;
  owner_host: string | null;
  owner_pid: number | null;
  lease_expires_at_ms: NullableEpochMs;
  fencing_token: ColumnType<number | string, number | undefined, number>;
  /** Sub-agents (006): the session, turn and tool call that started this one; null for a root session. */
  parent_session_id: ColumnType<string | null, string | null | undefined, string | null>;
  parent_turn_id: ColumnType<string | null, string | null | undefined, string | null>;
  parent_tool_call_id: ColumnType<string | null, string | null | undefined, string | null>;
  /** 1: nobody can answer an approval in this session, so what would ask is denied (006). */
  non_interactive: ColumnType<number, number | undefined, number>;
  /** Issue 25 (008): the principal that owns the session; null for one stored before principals. */
  principal: ColumnType<string | null, string | null | undefined, string | null>;
  /** Issue 25 (009): 1 when an admin created it: its turns draw on no principal's daily token budget. */
  quota_exempt: ColumnType<number, number | undefined, number>;
  /** Issue 26 (010): 1 when a turn running as its host went away goes on when the session is next opened. */
  resume_turns: ColumnType<number, number | undefined, number>;
}

export interface TurnsTable {
  id: string;
  session_id: string;
  client_request_id: string;
  status: string;
  error_code: string | null;
  error_message: string | null;
  final_text: string | null;
  started_at_ms: EpochMs;
  finished_at_ms: NullableEpochMs;
  /** JSON of a queued turn's input messages; null once it started (or for turns never queued). */
  input: string | null;
  queue_position: number | null;
  /** GR-2a (007): JSON of the session's guardrail trackers as this turn ended; null for a turn that did not end itself. */
  guardrail_trackers: ColumnType<string | null, string | null | undefined, string | null>;
  /** Issue 25 (009): the session's principal, copied into the row so the principal's quotas count its turns; null before 009 or for an unowned session. */
  principal: ColumnType<string | null, string | null | undefined, string | null>;
  /** Issue 26 (010): when the owner accepted a cancel of this running turn; a turn left running with one is not resumed. */
  cancel_requested_at_ms: ColumnType<number | string | null, number | null | undefined, number | null>;
  /** Issue 27 (011): the W3C `traceparent` of the turn's parent, written with its row; null before 011. */
  trace_parent: ColumnType<string | null, string | null | undefined, string | null>;
}

interface RunsTable {
  id: string;
  session_id: string;
  turn_id: string;
  trigger_type: string;
  created_at_ms: EpochMs;
}

export interface MessagesTable {
  id: string;
  session_id: string;
  turn_id: string;
  sequence: number;
  role: string;
  kind: string;
  /** JSON of the whole ChatMessage; role and kind are copies kept for querying. */
  content: string;
  created_at_ms: EpochMs;
  /** RL-4: a tool result's audit, written in the same statement (migration 004); null elsewhere. */
  audit_tool_call_id: AuditColumn<string>;
  audit_tool_name: AuditColumn<string>;
  audit_status: AuditColumn<string>;
  audit_arguments_hash: AuditColumn<string>;
  audit_dispatched_arguments_hash: AuditColumn<string>;
  audit_verdict: AuditColumn<string>;
  audit_decided_by: AuditColumn<string>;
  audit_error_code: AuditColumn<string>;
  audit_permission_wait_ms: AuditColumn<number | string>;
  audit_execution_ms: AuditColumn<number | string>;
  /** Issue 25 (migration 008): the principal that answered the approval, else the session's owner. */
  audit_principal: AuditColumn<string>;
  /** Issue 30 (migration 012): JSON of the runs of a call its retry policy ran more than once. */
  audit_attempts: AuditColumn<string>;
}

export interface TraceSpansTable {
  id: string;
  session_id: string;
  turn_id: string;
  kind: string;
  name: string;
  source: string;
  status: string;
  error_code: string | null;
  started_at_ms: EpochMs;
  ended_at_ms: NullableEpochMs;
}

interface TurnPlansTable {
  turn_id: string;
  session_id: string;
  /** JSON of the Plan. */
  plan: string;
  updated_at_ms: EpochMs;
}

export interface CompactionsTable {
  id: string;
  session_id: string;
  position: number;
  boundary_message_id: string;
  boundary_sequence: number;
  summary: string;
  replay_text: string | null;
  created_at_ms: EpochMs;
  rewound_at_ms: NullableEpochMs;
}

/** A column only tool results fill (RL-4): absent on insert for every other message. */
type AuditColumn<T> = ColumnType<T | null, T | null | undefined, T | null>;

/** The `tool_audit` view over `messages` (migration 004, recreated by 008): one row per audited tool result. */
export interface ToolAuditView {
  /** The id of the tool result message. */
  id: string;
  session_id: string;
  turn_id: string;
  sequence: number;
  created_at_ms: EpochMs;
  tool_call_id: string;
  tool_name: string;
  status: string;
  arguments_hash: string;
  dispatched_arguments_hash: string | null;
  verdict: string;
  decided_by: string | null;
  error_code: string | null;
  permission_wait_ms: number | string | null;
  execution_ms: number | string | null;
  /** Issue 25 (migration 008); null for a row written before it, or for a session without an owner. */
  principal: string | null;
  /** Issue 30 (migration 012): JSON of the runs, for a call run more than once; else null. */
  attempts: string | null;
}

export interface TasksTable {
  id: string;
  /** JSON of the task's spec (prompts, agent, limits, metadata). */
  spec: string;
  state: string;
  reason: string;
  risk_level: string | null;
  agent_session_id: string | null;
  turns_done: ColumnType<number, number | undefined, number>;
  last_checkpoint: string | null;
  control: string | null;
  control_seq: ColumnType<number, number | undefined, number>;
  event_sequence: ColumnType<number | string, number | undefined, number>;
  created_at_ms: EpochMs;
  updated_at_ms: EpochMs;
  started_at_ms: NullableEpochMs;
  finished_at_ms: NullableEpochMs;
  /** Issue 25 (008): the principal that submitted the task; null for one stored before principals. */
  principal: ColumnType<string | null, string | null | undefined, string | null>;
}

export interface TaskEventsTable {
  task_id: string;
  sequence: ColumnType<number | string, number, number>;
  message_id: string;
  event_type: string;
  /** JSON of the event's `data`. */
  data: string;
  created_at_ms: EpochMs;
  published_at_ms: NullableEpochMs;
}

interface TaskConsumerPositionsTable {
  consumer_id: string;
  session_id: string;
  last_sequence: ColumnType<number | string, number, number>;
  updated_at_ms: EpochMs;
}

/** Issue 25 (009): a principal's input and output tokens of one UTC day. */
interface PrincipalUsageTable {
  principal: string;
  /** `YYYY-MM-DD`, UTC. */
  day: string;
  tokens: ColumnType<number | string, number, number>;
}

/** Issue 25 (009): one open stream of a principal, held by a host until `expires_at_ms` (database clock), which it renews. */
interface StreamSlotsTable {
  id: string;
  principal: string;
  owner_id: string;
  expires_at_ms: EpochMs;
}

/** Issue 26 (010): an approval a tool call asked for, and its answer once given. */
interface ApprovalsTable {
  turn_id: string;
  tool_call_id: string;
  session_id: string;
  tool_name: string;
  /** JSON array of the paths the request names. */
  paths: string;
  requested_at_ms: EpochMs;
  expires_at_ms: NullableEpochMs;
  /** `allow_once`, `deny`, or how it ended unanswered (`cancelled`, `expired`); null while pending. */
  decision: string | null;
  answered_by: string | null;
  answered_at_ms: NullableEpochMs;
  /** When the allowed call began to run; null: it never did. */
  started_at_ms: NullableEpochMs;
}

export interface Database {
  sessions: SessionsTable;
  turns: TurnsTable;
  messages: MessagesTable;
  trace_spans: TraceSpansTable;
  turn_plans: TurnPlansTable;
  compactions: CompactionsTable;
  runs: RunsTable;
  tool_audit: ToolAuditView;
  tasks: TasksTable;
  task_events: TaskEventsTable;
  task_consumer_positions: TaskConsumerPositionsTable;
  principal_usage: PrincipalUsageTable;
  stream_slots: StreamSlotsTable;
  approvals: ApprovalsTable;
}

export function toMs(value: number | string): number;
export function toMs(value: number | string | null): number | null;
export function toMs(value: number | string | null): number | null {
  return value === null ? null : Number(value);
}
