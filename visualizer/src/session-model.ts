import { applyActorMessage } from '../../src/inspect/actor-delta.js';
import type { ActorChange, ActorInfo, ActorState, InspectedSession, StreamEnvelope, StreamHello, StreamItem, TakenTransition, VersionedActorState } from '../../src/inspect/stream-protocol.js';

export interface ActorView {
  info: ActorInfo;
  state: ActorState | null;
  /** The transitions its last snapshot took: marked on its chart. */
  taken: TakenTransition[];
  /** Order of arrival, to prefer the newest actor of a chart. */
  order: number;
}

/** An actor's message as the timeline keeps it: the whole state it led to, and what its delta said (none for a whole snapshot). */
type SnapshotEntry = Extract<StreamItem, { kind: 'snapshot' }> & { change?: ActorChange };

/** A timeline entry: a stream item, an actor's `delta` rebuilt into the state it leads to. */
export type TimelineItem = Exclude<StreamItem, { kind: 'snapshot' | 'delta' }> | SnapshotEntry;

/** Entries kept for the timeline; the oldest go first past this. */
const TIMELINE_CAP = 50_000;

/**
 * What the page knows of one session, folded from its merged stream: every item received (the
 * timeline), the actors as they stand, and the session's live view for the controls. Items up to
 * the hello's cursor are history: they fill the timeline but do not move the charts, which start
 * from the hello's present. Actors' deltas are applied to the state of the message before (the
 * hello's `history` where the buffer starts, else what the stream gave), so every entry holds the
 * whole state; a delta whose base the page does not hold means it missed a message, and `onGap`
 * starts the stream again.
 */
export class SessionModel {
  items: TimelineItem[] = [];
  /** Update entries whose sequence skipped numbers: cursor → how many are missing. */
  readonly gaps = new Map<number, number>();
  readonly actors = new Map<string, ActorView>();
  session: InspectedSession | null = null;
  /** Issue 25: who owns the session, from the hello; null for a session without an owner. */
  principal: string | null = null;
  /** The latest progress of each running tool call of the running turn (`2/5 — message`), gone when the call ends. */
  readonly progress = new Map<string, string>();
  /** Each actor's state at the newest of its messages applied, with its version: where its next delta applies. */
  private readonly held = new Map<string, VersionedActorState>();
  /** A gap was found: what follows cannot be applied until the hello of the stream started again. */
  private stale = false;
  /** This stream was started again after a gap: a gap in its history is not chased again (the entry is left out). */
  private resynced = false;
  private presentFrom = 0;
  private lastSequence: number | null = null;
  private arrivals = 0;
  /** Bumped on each change, so views redraw only what changed. */
  version = { actors: 0, items: 0, session: 0 };

  constructor(
    readonly sessionId: string,
    private readonly onGap: () => void = () => undefined,
  ) {}

  hello(hello: StreamHello): void {
    this.stale = false;
    if (hello.reset) {
      this.items = [];
      this.gaps.clear();
      this.lastSequence = null;
      this.held.clear();
      for (const base of hello.history) this.held.set(base.state.actor.actorId, base);
    }
    // An actor with no message in what follows starts from the hello; one with messages gets a whole snapshot first, or has its base above.
    for (const present of hello.actors) if (!this.held.has(present.state.actor.actorId)) this.held.set(present.state.actor.actorId, present);
    this.actors.clear();
    this.progress.clear();
    for (const { state } of hello.actors) this.actors.set(state.actor.actorId, { info: state.actor, state, taken: [], order: this.arrivals++ });
    this.session = hello.session;
    this.principal = hello.principal;
    this.presentFrom = hello.cursor;
    this.version.actors += 1;
    this.version.session += 1;
    this.version.items += 1;
  }

  /** Starts over after a gap: the hello that follows (with `reset`) gives the whole picture. */
  private gap(cursor: number): void {
    if (this.resynced && cursor <= this.presentFrom) return;
    this.stale = true;
    this.resynced = true;
    this.onGap();
  }

  add(received: StreamItem): void {
    const last = this.items.at(-1);
    if (this.stale || (last && received.cursor <= last.cursor)) return;
    if (received.cursor > this.presentFrom) this.resynced = false;
    let item: TimelineItem;
    if (received.kind === 'snapshot' || received.kind === 'delta') {
      const applied = applyActorMessage(this.held.get(received.actorId), received);
      if (!applied.ok) return this.gap(received.cursor);
      this.held.set(received.actorId, applied.state);
      const { state } = applied.state;
      item = received.kind === 'snapshot' ? received : { kind: 'snapshot', cursor: received.cursor, at: received.at, actorId: received.actorId, eventType: received.eventType, transitions: received.transitions, version: received.version, state, change: received.change };
    } else item = received;
    this.items.push(item);
    if (this.items.length > TIMELINE_CAP) this.items.splice(0, this.items.length - TIMELINE_CAP + 1_000);
    this.version.items += 1;
    if (item.kind === 'update') this.checkGap(item.cursor, item.envelope);
    if (item.cursor <= this.presentFrom) return;
    if (item.kind === 'actor' && !this.actors.has(item.actor.actorId)) {
      this.actors.set(item.actor.actorId, { info: item.actor, state: null, taken: [], order: this.arrivals++ });
      this.version.actors += 1;
    } else if (item.kind === 'snapshot') {
      const view = this.actors.get(item.actorId) ?? { info: item.state.actor, state: null, taken: [], order: this.arrivals++ };
      view.state = item.state;
      view.taken = item.transitions;
      this.actors.set(item.actorId, view);
      this.version.actors += 1;
    } else if (item.kind === 'update') {
      this.fold(item.envelope);
    }
  }

  private checkGap(cursor: number, envelope: StreamEnvelope): void {
    // A turn resumed by a new owner (issue 26) is numbered above the block the old one reserved: the
    // numbers skipped before it were never issued, so they are not shown as missing.
    const resumed = envelope.update.type === 'turn_resumed';
    if (!resumed && this.lastSequence !== null && envelope.sequence > this.lastSequence + 1) this.gaps.set(cursor, envelope.sequence - this.lastSequence - 1);
    this.lastSequence = Math.max(this.lastSequence ?? 0, envelope.sequence);
  }

  /** The session's live view, moved by its updates as the host's own live view is. */
  private fold(envelope: StreamEnvelope): void {
    const session = this.session;
    if (!session) return;
    session.lastUpdateSequence = envelope.sequence;
    const u = envelope.update;
    const run = session.runtime.kind === 'running' && session.runtime.turnId === envelope.turnId ? session.runtime : null;
    switch (u.type) {
      case 'turn_started':
        this.progress.clear();
        session.runtime = { kind: 'running', turnId: envelope.turnId, clientRequestId: u.clientRequestId, phase: 'starting', draftText: '', draftReasoning: '', toolCalls: [], pendingApproval: null, plan: null };
        break;
      case 'turn_resumed':
        // The same turn going on under a new owner: running again from its start phase, its draft and
        // running calls gone with the old host (their results, if any, are in its stored messages).
        this.progress.clear();
        session.runtime = {
          kind: 'running',
          turnId: envelope.turnId,
          clientRequestId: u.clientRequestId,
          phase: 'starting',
          draftText: '',
          draftReasoning: '',
          toolCalls: [],
          pendingApproval: null,
          plan: run?.plan ?? null,
        };
        break;
      case 'phase_changed':
        if (run) run.phase = u.phase;
        break;
      case 'tool_call_started':
        if (run && !run.toolCalls.some((c) => c.toolCallId === u.toolCallId)) run.toolCalls.push({ toolCallId: u.toolCallId, name: u.name, status: u.status });
        break;
      case 'tool_call_progress': {
        const said = progressText(u.progress);
        const call = run?.toolCalls.find((c) => c.toolCallId === u.toolCallId);
        if (!call || said === null || !UNDERWAY.has(call.status)) return;
        // Only a call's execution reports progress; the change to running has no update of its own.
        call.status = 'running';
        this.progress.set(u.toolCallId, said);
        break;
      }
      case 'tool_call_finished': {
        this.progress.delete(u.toolCallId);
        const call = run?.toolCalls.find((c) => c.toolCallId === u.toolCallId);
        if (call) call.status = u.status;
        break;
      }
      case 'permission_requested':
        if (run) run.pendingApproval = { toolCallId: u.toolCallId, name: u.name, paths: u.paths };
        break;
      case 'permission_resolved':
        if (run?.pendingApproval?.toolCallId === u.toolCallId) run.pendingApproval = null;
        break;
      case 'plan_updated':
        if (run) run.plan = u.plan;
        break;
      case 'queue_updated':
        session.queue = u.queue;
        break;
      case 'turn_finished':
        this.progress.clear();
        session.runtime = { kind: 'terminal', turnId: envelope.turnId, outcome: u.outcome, plan: run?.plan ?? null };
        break;
      default:
        return;
    }
    this.version.session += 1;
  }

  /** Whether the actor still runs: its status is active and its parent (up to the session) still has it as a child. */
  isLive(actorId: string): boolean {
    const view = this.actors.get(actorId);
    if (!view || (view.state && view.state.status !== 'active')) return false;
    const parentId = view.info.parentId;
    if (parentId === null) return true;
    const parent = this.actors.get(parentId);
    if (!parent?.state || !Object.values(parent.state.children).includes(actorId)) return false;
    return this.isLive(parentId);
  }

  /** The actor each chart shows: the newest live one, else the newest that ended (drawn as ended). */
  actorFor(machineId: string): { view: ActorView; live: boolean } | null {
    let best: { view: ActorView; live: boolean } | null = null;
    for (const view of this.actors.values()) {
      if (view.info.machineId !== machineId) continue;
      const live = this.isLive(view.info.actorId);
      if (!best || (live && !best.live) || (live === best.live && view.order > best.view.order)) best = { view, live };
    }
    return best;
  }

  /** Each actor's newest snapshot at or before timeline entry `index`: the read-only past. */
  statesAt(index: number): ActorState[] {
    const seen = new Map<string, ActorState>();
    for (let i = Math.min(index, this.items.length - 1); i >= 0; i -= 1) {
      const item = this.items[i]!;
      if (item.kind === 'snapshot' && !seen.has(item.actorId)) seen.set(item.actorId, item.state);
    }
    return [...seen.values()].reverse();
  }
}

/** The statuses of a tool call that has not ended (the others are its result's): only these have progress. */
const UNDERWAY = new Set<string>(['validating', 'waiting_permission', 'running']);

/** Progress in the MCP shape (`{ progress, total?, message? }`) as `2/5 — message`; null for any other shape. */
function progressText(progress: unknown): string | null {
  const p = progress as { progress?: unknown; total?: unknown; message?: unknown } | null;
  if (typeof p !== 'object' || p === null || typeof p.progress !== 'number') return null;
  const count = typeof p.total === 'number' ? `${p.progress}/${p.total}` : String(p.progress);
  return typeof p.message === 'string' && p.message !== '' ? `${count} — ${p.message.slice(0, 200)}` : count;
}
