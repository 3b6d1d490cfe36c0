import type { TaskState } from '../machines/task.machine.js';
import type { TaskSpec } from '../src/protocol/task-spec.js';

/** A task as stored: its spec, where its lifecycle stands, and what its worker needs to resume it. */
export interface TaskRow {
  id: string;
  spec: TaskSpec;
  state: TaskState;
  /** Why it is in that state (the last transition's reason). */
  reason: string;
  riskLevel: string | null;
  /** The agent session the task runs in, once a worker has claimed it. */
  agentSessionId: string | null;
  /** Turns completed so far: the task's checkpoint between turns. */
  turnsDone: number;
  lastCheckpoint: string | null;
  /** The last control request (pause, resume, abort) and its number; a worker applies each number once. */
  control: TaskControl | null;
  controlSeq: number;
  /** Every event sequence up to this one has been issued. */
  eventSequence: number;
  createdAtMs: number;
  updatedAtMs: number;
  /** When it first became RUNNING: its max duration counts from here. */
  startedAtMs: number | null;
  finishedAtMs: number | null;
  /** Issue 25: the principal that submitted it (its agent session is theirs too); absent for a task stored before principals. */
  principal?: string;
}

export type TaskControl = 'pause' | 'resume' | 'abort';

/** An event as stored before (and after) it is published: the outbox row. */
export interface TaskEventRow {
  taskId: string;
  sequence: number;
  messageId: string;
  eventType: string;
  data: Record<string, unknown>;
  createdAtMs: number;
  /** Null until the broker confirmed it. */
  publishedAtMs: number | null;
}

export type NewTaskEvent = Omit<TaskEventRow, 'taskId' | 'sequence' | 'publishedAtMs'>;

/** What an event changes on its task row, in the same transaction. */
export interface TaskChange {
  state?: TaskState;
  reason?: string;
  riskLevel?: string;
  turnsDone?: number;
  lastCheckpoint?: string;
  startedAtMs?: number;
  finishedAtMs?: number;
}

/** The writer's hold on the task: its agent session's fencing token (see SessionStorage). */
export interface TaskFence {
  sessionId: string;
  token: number;
}

/** A change of state the task row refused: the task had already reached a terminal state. */
export class TaskStateConflict extends Error {
  readonly code = 'TaskStateConflict';
  constructor(
    readonly taskId: string,
    readonly state: TaskState,
  ) {
    super(`task ${taskId} is already ${state}`);
    this.name = 'TaskStateConflict';
  }
}

export interface EventRange {
  /** Events after this sequence. */
  afterSequence?: number;
  /** … up to and including this one. */
  upToSequence?: number;
  limit?: number;
}

/**
 * The durable side of tasks. Every method completes or rejects as a whole. Events are fenced by the
 * task's agent session: a worker that lost the session (another resumed the task) cannot append.
 */
export interface TaskStorage {
  migrate(): Promise<void>;
  /** Stores a new PENDING task of `principal` (none: stored without one); an id already stored answers that task, `created: false`. */
  createTask(id: string, spec: TaskSpec, nowMs: number, principal?: string): Promise<{ created: boolean; task: TaskRow }>;
  getTask(id: string): Promise<TaskRow | undefined>;
  /** Tasks newest first, `limit` at most. */
  listTasks(limit: number): Promise<TaskRow[]>;
  /**
   * How many tasks are in each state that is not terminal (issue 27: the metrics' `turnchart_tasks`);
   * a state with none is absent. Terminal ones are not counted: they only ever grow, and counting
   * them would read the whole table's history on every scrape.
   */
  countLiveTasks(): Promise<Partial<Record<TaskState, number>>>;
  /** Gives the task its agent session unless it has one; resolves with the row as it then is (whoever won). */
  claimTask(id: string, agentSessionId: string, nowMs: number): Promise<TaskRow | undefined>;
  /**
   * Issues the task's next sequence to `event` and stores it unpublished, applying `change` to the
   * task row in the same transaction. A change of state on a terminal task is refused
   * (`TaskStateConflict`): a task reaches exactly one terminal state.
   */
  appendTaskEvent(taskId: string, event: NewTaskEvent, change: TaskChange | null, fence?: TaskFence): Promise<TaskEventRow>;
  markPublished(taskId: string, sequences: number[], nowMs: number): Promise<void>;
  listTaskEvents(taskId: string, range?: EventRange): Promise<TaskEventRow[]>;
  /** Events not yet confirmed by the broker that were stored at or before `createdBeforeMs`, oldest first. */
  listUnpublished(createdBeforeMs: number, limit: number): Promise<TaskEventRow[]>;
  /** Records a control request for the task's worker; undefined for an unknown task. */
  requestControl(taskId: string, control: TaskControl, nowMs: number): Promise<TaskRow | undefined>;
  /** A consumer's last processed sequence of a task session (0 when it has none). */
  loadPosition(consumerId: string, sessionId: string): Promise<number>;
  /** Records it; a position never moves back. */
  savePosition(consumerId: string, sessionId: string, sequence: number, nowMs: number): Promise<void>;
  close(): Promise<void>;
}

export const TASK_STORAGE_METHODS = [
  'migrate',
  'createTask',
  'getTask',
  'listTasks',
  'countLiveTasks',
  'claimTask',
  'appendTaskEvent',
  'markPublished',
  'listTaskEvents',
  'listUnpublished',
  'requestControl',
  'loadPosition',
  'savePosition',
  'close',
] as const satisfies readonly (keyof TaskStorage)[];
