import type { Subscription as RxSubscription } from 'rxjs';
import type { AnyActorRef, InspectionEvent, Subscription } from 'xstate';
import type { UpdateEnvelope } from '../protocol/updates.js';
import type { SessionHandle } from '../runtime/session-handle.js';
import { actorInfo, currentActors } from './actor-state.js';
import { sanitize } from './sanitize.js';
import { SentActor } from './sent-actor.js';
import { changeJson, jsonMember, knownActor, numberMember, stateJson, transitionsJson, wordMember, type KnownActor } from './message-json.js';
import type { ActorChange, ActorState, StreamHello, StreamItem, VersionedActorState } from './stream-protocol.js';

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
 * An actor's message (`snapshot` or `delta`) as the buffer knows it, for the buffer's history. Its
 * state or change is read back from its JSON when it leaves the buffer, rather than kept as objects
 * the collector would walk for as long as the message is buffered.
 */
type ActorEntry = { readonly id: string; readonly whole: boolean };

/** An actor's base: its state as last folded (null before its first whole message is), and the JSON of its messages that left the buffer since, oldest first. */
interface Base {
  base: VersionedActorState | null;
  left: string[];
}

/** Messages of one actor that left the buffer before they are folded into its base: a tool call makes fewer. */
const FOLD_AT = 64;

/** An actor as the watch knows it; `sent` once it has a message of its state. */
interface WatchedActor extends KnownActor {
  sent?: SentActor;
  /** Microsteps seen since its last snapshot: XState's transitions its next snapshot took, one list per microstep. */
  steps?: (readonly unknown[])[];
  /** Its buffer entries (the same for all of its whole messages, and for all of its deltas). */
  whole?: ActorEntry;
  delta?: ActorEntry;
}

/** A buffered message. */
interface Buffered extends Sent {
  actor?: ActorEntry;
}

/**
 * One session seen by the inspector: while at least one page listens, XState inspection is on for
 * the session's actor system (session → turn → tool call, and the effect port) and its events are
 * merged, in the order they happened, with the session's update envelopes into one stream. With
 * no listener the observer is removed, and XState's inspection costs the session one size check
 * per event. Inspection events are only recorded as they happen; sanitizing and serializing run
 * in a batch after the step, once per message whatever the number of pages. An actor's first
 * message is its whole state, the next ones what changed (`delta`): a step costs what it changed.
 */
export class SessionWatch {
  private readonly listeners = new Set<WatchListener>();
  private readonly ring: Buffered[] = [];
  private pending: Raw[] = [];
  private flushScheduled = false;
  /** Each actor seen, with what its messages have said (`sent`: the next one is sent as the difference). Gone with the actor. */
  private readonly actors = new WeakMap<AnyActorRef, WatchedActor>();
  private lastTurn: { id: unknown; json: string } = { id: undefined, json: '' };
  /**
   * For each actor with messages in the buffer: its state before the oldest of them, where a page
   * that replays the buffer starts its deltas — the messages that left the buffer, kept as their
   * JSON and folded into the base (parsed, the deltas applied in place) only when a page asks for it
   * or `FOLD_AT` of them gather. Most actors (a tool call's) have all their messages leave before
   * either happens, and none of them is parsed. An actor whose messages have all left has no base,
   * and its next message is whole.
   */
  private readonly bases = new Map<string, Base>();
  /** Messages in the buffer per actor: a base is kept only while its actor has some. */
  private readonly buffered = new Map<string, number>();
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
    // A page that resumes holds every actor's state up to `after`, so the replayed deltas apply to it.
    const replay = (resumable ? this.ring.filter((s) => s.cursor > after) : [...this.ring]).map(({ cursor, json }) => ({ cursor, json }));
    const hello: StreamHello = {
      sessionId: this.handle.id,
      cursor: this.lastCursor,
      reset: !resumable,
      // Each actor with the version of its newest message, so the deltas after the hello apply to it.
      actors: this.ended ? [] : currentActors(this.handle.actor, (ref) => this.actors.get(ref)?.sent?.version ?? 0),
      history: resumable ? [] : this.history(),
      session: this.handle.snapshot(),
      principal: this.handle.principal,
    };
    if (this.ended) queueMicrotask(() => listener.end());
    return { hello, replay };
  }

  /** Where the buffer's deltas start: the base of each actor whose oldest buffered message is a delta (copied: bases move on). */
  private history(): VersionedActorState[] {
    const out: VersionedActorState[] = [];
    const seen = new Set<string>();
    for (const entry of this.ring) {
      if (!entry.actor || seen.has(entry.actor.id)) continue;
      seen.add(entry.actor.id);
      const held = this.bases.get(entry.actor.id);
      const base = held && !entry.actor.whole ? fold(held) : null;
      if (base) out.push({ version: base.version, state: { ...base.state, context: copied(base.state.context) } });
    }
    return out;
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
    const at = JSON.stringify(this.now());
    for (const raw of batch) {
      const entry = this.messageOf(raw, at);
      if (entry === null) continue;
      flatten(entry.json);
      this.ring.push(entry);
      if (entry.actor) this.buffered.set(entry.actor.id, (this.buffered.get(entry.actor.id) ?? 0) + 1);
      if (this.ring.length > WATCH_BUFFER) this.drop(this.ring.length - WATCH_BUFFER);
      for (const listener of this.listeners) listener.item(entry);
    }
  }

  /** Drops the oldest messages; an actor's is kept for its base while it has later ones buffered. */
  private drop(count: number): void {
    for (let i = 0; i < count; i += 1) {
      // One at a time from the front: `shift` trims a long array in place, where `splice(0, n)` moves all 2 000 entries each time.
      const dropped = this.ring.shift()!;
      const actor = dropped.actor;
      if (!actor) continue;
      const left = (this.buffered.get(actor.id) ?? 1) - 1;
      if (left === 0) {
        this.buffered.delete(actor.id);
        this.bases.delete(actor.id);
        continue;
      }
      this.buffered.set(actor.id, left);
      let held = this.bases.get(actor.id);
      if (!held) this.bases.set(actor.id, (held = { base: null, left: [] }));
      held.left.push(dropped.json);
      if (held.left.length >= FOLD_AT) fold(held);
    }
  }

  /**
   * A recorded event as the message it makes, written as JSON straight away: what repeats from one
   * message to the next (an actor's info and id, the transitions of its chart) is serialized once,
   * so only what a step said is stringified. Keys come in the order of `StreamItem`'s types.
   */
  private messageOf(raw: Raw, at: string): Buffered | null {
    if (raw.kind === 'update') {
      // The envelope's own fields are the runtime's ids and numbers; only the update holds what a model or tool said.
      const { turnId, sequence, occurredAtMs, update } = raw.envelope;
      const cursor = this.cursors.next();
      const rest = `${numberMember('sequence', sequence)}${numberMember('occurredAtMs', occurredAtMs)}${jsonMember('update', sanitize(update))}`;
      const turn = this.turnJson(turnId);
      // Members come with their leading comma, the turn's without: the envelope is cut (which copies its pieces into one string) only when it has no turn.
      const envelope = turn !== '' ? `{${turn}${rest}}` : `{${rest.substring(1)}}`;
      return { cursor, json: `{"kind":"update","cursor":${cursor},"at":${at},"envelope":${envelope}}` };
    }
    const known = this.knownOf(raw.ref);
    switch (raw.kind) {
      case 'actor': {
        const cursor = this.cursors.next();
        return { cursor, json: `{"kind":"actor","cursor":${cursor},"at":${at},"actor":${known.json}}` };
      }
      case 'microstep': {
        if (known.steps) known.steps.push(raw.transitions);
        else known.steps = [raw.transitions];
        return null;
      }
      case 'event': {
        const cursor = this.cursors.next();
        const source = raw.source ? this.knownOf(raw.source).id : 'null';
        const json = `{"kind":"event","cursor":${cursor},"at":${at},"actorId":${known.id},"sourceId":${source}${wordMember('eventType', raw.event.type)}${jsonMember('event', sanitize(raw.event))}}`;
        return { cursor, json };
      }
      case 'snapshot': {
        const info = known.info;
        // The effect port's snapshots carry no state: its events say what it does.
        if (info.machineId === null) return null;
        const transitions = transitionsJson(known.steps);
        known.steps = undefined;
        const sent = (known.sent ??= new SentActor(info));
        // Every message of the actor has left the buffer, and its base with them: a page that joins must get this one whole.
        const message = sent.next(raw.snapshot, !this.buffered.has(info.actorId));
        const cursor = this.cursors.next();
        const head = `"cursor":${cursor},"at":${at},"actorId":${known.id}${wordMember('eventType', raw.event.type)},"transitions":${transitions},"version":${message.version}`;
        const actor = message.change === null ? (known.whole ??= { id: info.actorId, whole: true }) : (known.delta ??= { id: info.actorId, whole: false });
        return message.change === null
          ? { cursor, json: `{"kind":"snapshot",${head},"state":${stateJson(known, message.state)}}`, actor }
          : { cursor, json: `{"kind":"delta",${head},"change":${changeJson(message.change)}}`, actor };
      }
    }
  }

  private knownOf(ref: AnyActorRef): WatchedActor {
    let known = this.actors.get(ref);
    if (!known) {
      known = knownActor(actorInfo(ref));
      this.actors.set(ref, known);
    }
    return known;
  }

  /** `"turnId":…` of an update (nothing when it has none): the same turn's, quoted once, in most of a batch. */
  private turnJson(turnId: unknown): string {
    if (turnId !== this.lastTurn.id) this.lastTurn = { id: turnId, json: jsonMember('turnId', turnId).substring(1) };
    return this.lastTurn.json;
  }

  private end(): void {
    this.flush();
    this.ended = true;
    this.detach();
    for (const listener of [...this.listeners]) listener.end();
  }
}

/**
 * Makes V8 lay a message's text out as one string. Written from pieces, it is a tree of string
 * nodes (one per join); kept in the buffer, every node survives each young-generation collection
 * and is copied by it, where one flat string is copied once. Reading a character flattens a joined
 * string in place. In `inspect_overhead_ratio`'s workload the watch's share of the collector's time
 * fell from 65 to 27 µs a step.
 */
function flatten(text: string): void {
  text.charCodeAt(0);
}

/** A copy of a base's context for a hello: the base changes in place as messages leave the buffer. */
function copied(context: unknown): unknown {
  return typeof context === 'object' && context !== null && !Array.isArray(context) ? { ...context } : context;
}

/**
 * The actor's base with the messages that left the buffer folded in: an actor's first message in
 * the buffer is whole and messages leave in order, so a delta always has its base here.
 */
function fold(held: Base): VersionedActorState | null {
  for (const json of held.left) {
    const item = JSON.parse(json) as Extract<StreamItem, { kind: 'snapshot' | 'delta' }>;
    if (item.kind === 'snapshot') held.base = { version: item.version, state: item.state };
    else if (held.base) {
      held.base.version = item.version;
      applyInPlace(held.base.state, item.change);
    }
  }
  held.left = [];
  return held.base;
}

/** A delta applied to a base the watch owns (parsed from the buffer's JSON): no copy per dropped message. */
function applyInPlace(state: ActorState, change: ActorChange): void {
  if (change.status !== undefined) state.status = change.status;
  if (change.states !== undefined) state.states = change.states;
  if (change.children !== undefined) state.children = change.children;
  if ('context' in change) state.context = change.context;
  else if (change.set !== undefined || change.unset !== undefined) {
    // JSON.parse made the context and the set: a `__proto__` key (which a key-wise context never has, see `plainMembersFit`) stays a key either way.
    const context = state.context as Record<string, unknown>;
    for (const key of change.unset ?? []) delete context[key];
    for (const [key, value] of Object.entries(change.set ?? {})) Object.defineProperty(context, key, { value, enumerable: true, writable: true, configurable: true });
  }
}
