import type { Subscription as RxSubscription } from 'rxjs';
import type { AnyActorRef, InspectionEvent, Subscription } from 'xstate';
import type { UpdateEnvelope } from '../protocol/updates.js';
import type { SessionHandle } from '../runtime/session-handle.js';
import { actorInfo, actorState, currentActors, takenTransitions } from './actor-state.js';
import { sanitize } from './sanitize.js';
import type { ActorInfo, StreamHello, StreamItem, TakenTransition } from './stream-protocol.js';

/** A message ready to send: its cursor and its JSON. */
export interface Sent {
  cursor: number;
  json: string;
}

export interface WatchListener {
  item(sent: Sent): void;
  /** The session closed: the stream ends (the page reconnects, which opens the session again). */
  end(): void;
}

/** Hands out the cursors of every stream of one host, so a cursor is never reused while it runs. */
export interface CursorSource {
  next(): number;
}

/** What the watcher records in the hot path: references only, turned into messages a macrotask later. */
type Raw =
  | { kind: 'actor'; ref: AnyActorRef }
  | { kind: 'event'; ref: AnyActorRef; source: AnyActorRef | undefined; event: { type: string } }
  | { kind: 'microstep'; ref: AnyActorRef; transitions: readonly unknown[] }
  | { kind: 'snapshot'; ref: AnyActorRef; event: { type: string }; snapshot: unknown }
  | { kind: 'update'; envelope: UpdateEnvelope };

const WATCH_BUFFER = 2_000;

/**
 * One session seen by the inspector: while at least one page listens, XState inspection is on for
 * the session's actor system (session → turn → tool call, and the effect port) and its events are
 * merged, in the order they happened, with the session's update envelopes into one stream. With
 * no listener the observer is removed, and XState's inspection costs the session one size check
 * per event. Inspection events are only recorded as they happen; sanitizing and serializing run
 * in a batch after the step, once per message whatever the number of pages.
 */
export class SessionWatch {
  private readonly listeners = new Set<WatchListener>();
  private readonly ring: Sent[] = [];
  private pending: Raw[] = [];
  private flushScheduled = false;
  private readonly infos = new WeakMap<AnyActorRef, ActorInfo>();
  /** Microsteps seen since each actor's last snapshot: the transitions its next snapshot took. */
  private readonly steps = new Map<string, TakenTransition[]>();
  /** Each actor's context in its last snapshot sent: an unchanged one is not sent again. */
  private readonly contexts = new Map<string, unknown>();
  private inspection: Subscription | null = null;
  private updates: RxSubscription | null = null;
  private ended = false;

  constructor(
    readonly handle: SessionHandle,
    private readonly cursors: CursorSource,
    private readonly onIdle: (watch: SessionWatch) => void,
    private readonly now: () => number = Date.now,
  ) {}

  get listenerCount(): number {
    return this.listeners.size;
  }

  /** The newest cursor this watch has sent, or 0. */
  get lastCursor(): number {
    return this.ring.at(-1)?.cursor ?? 0;
  }

  /**
   * Adds a page: answers the present (`hello`) and what it missed — the items after `after` when
   * they are all still buffered, else the whole buffer with `reset`.
   */
  listen(listener: WatchListener, after: number | null): { hello: StreamHello; replay: Sent[] } {
    if (this.listeners.size === 0 && !this.ended) this.attach();
    this.listeners.add(listener);
    this.flush();
    const first = this.ring[0]?.cursor ?? this.lastCursor + 1;
    const resumable = after !== null && after >= first - 1 && after <= this.lastCursor;
    const replay = resumable ? this.ring.filter((s) => s.cursor > after) : [...this.ring];
    const hello: StreamHello = {
      sessionId: this.handle.id,
      cursor: this.lastCursor,
      reset: !resumable,
      actors: this.ended ? [] : currentActors(this.handle.actor),
      session: this.handle.snapshot(),
      principal: this.handle.principal,
    };
    if (this.ended) queueMicrotask(() => listener.end());
    return { hello, replay };
  }

  unlisten(listener: WatchListener): void {
    if (!this.listeners.delete(listener) || this.listeners.size > 0) return;
    this.detach();
    this.onIdle(this);
  }

  private attach(): void {
    this.prefill();
    this.inspection = this.handle.actor.system.inspect((event: InspectionEvent) => this.record(event));
    this.updates = this.handle.updates$.subscribe({
      next: (envelope) => this.push({ kind: 'update', envelope }),
      complete: () => this.end(),
    });
  }

  private detach(): void {
    this.inspection?.unsubscribe();
    this.updates?.unsubscribe();
    this.inspection = null;
    this.updates = null;
  }

  /** The session's recent updates, so the first page's timeline does not start empty. */
  private prefill(): void {
    if (this.ring.length > 0) return;
    const last = this.handle.snapshot().lastUpdateSequence;
    // The oldest update still in the session's replay ring: the first resume point it accepts.
    let lo = Math.max(0, last - 512);
    let hi = last;
    while (lo < hi) {
      const mid = Math.floor((lo + hi) / 2);
      if (this.handle.replayUpdates(mid).ok) hi = mid;
      else lo = mid + 1;
    }
    const replay = this.handle.replayUpdates(lo);
    if (replay.ok) for (const envelope of replay.updates) this.push({ kind: 'update', envelope });
  }

  private record(event: InspectionEvent): void {
    switch (event.type) {
      case '@xstate.actor':
        return this.push({ kind: 'actor', ref: event.actorRef as AnyActorRef });
      case '@xstate.event':
        return this.push({ kind: 'event', ref: event.actorRef as AnyActorRef, source: event.sourceRef as AnyActorRef | undefined, event: event.event });
      case '@xstate.microstep':
        return this.push({ kind: 'microstep', ref: event.actorRef as AnyActorRef, transitions: event._transitions });
      case '@xstate.snapshot':
        return this.push({ kind: 'snapshot', ref: event.actorRef as AnyActorRef, event: event.event, snapshot: event.snapshot });
      default:
        return undefined;
    }
  }

  private push(raw: Raw): void {
    this.pending.push(raw);
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    setImmediate(() => this.flush());
  }

  private flush(): void {
    this.flushScheduled = false;
    if (this.pending.length === 0) return;
    const batch = this.pending;
    this.pending = [];
    const at = this.now();
    for (const raw of batch) {
      const item = this.itemOf(raw, at);
      if (item === null) continue;
      const sent = { cursor: item.cursor, json: JSON.stringify(item) };
      this.ring.push(sent);
      if (this.ring.length > WATCH_BUFFER) this.ring.splice(0, this.ring.length - WATCH_BUFFER);
      for (const listener of this.listeners) listener.item(sent);
    }
  }

  private itemOf(raw: Raw, at: number): StreamItem | null {
    if (raw.kind === 'update') return { kind: 'update', cursor: this.cursors.next(), at, envelope: sanitize(raw.envelope) as UpdateEnvelope };
    const info = this.infoOf(raw.ref);
    switch (raw.kind) {
      case 'actor':
        return { kind: 'actor', cursor: this.cursors.next(), at, actor: info };
      case 'microstep': {
        const taken = this.steps.get(info.actorId) ?? [];
        taken.push(...takenTransitions(raw.transitions));
        this.steps.set(info.actorId, taken);
        return null;
      }
      case 'event':
        return {
          kind: 'event',
          cursor: this.cursors.next(),
          at,
          actorId: info.actorId,
          sourceId: raw.source ? this.infoOf(raw.source).actorId : null,
          eventType: raw.event.type,
          event: sanitize(raw.event),
        };
      case 'snapshot': {
        // The effect port's snapshots carry no state: its events say what it does.
        if (info.machineId === null) return null;
        const transitions = this.steps.get(info.actorId) ?? [];
        this.steps.delete(info.actorId);
        const context = (raw.snapshot as { context?: unknown }).context;
        const changed = this.contexts.get(info.actorId) !== context;
        this.contexts.set(info.actorId, context);
        return {
          kind: 'snapshot',
          cursor: this.cursors.next(),
          at,
          actorId: info.actorId,
          eventType: raw.event.type,
          transitions,
          state: actorState(info, raw.snapshot, changed),
        };
      }
    }
  }

  private infoOf(ref: AnyActorRef): ActorInfo {
    let info = this.infos.get(ref);
    if (!info) {
      info = actorInfo(ref);
      this.infos.set(ref, info);
    }
    return info;
  }

  private end(): void {
    this.flush();
    this.ended = true;
    this.detach();
    for (const listener of [...this.listeners]) listener.end();
  }
}
