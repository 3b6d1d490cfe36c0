import type { ActorChange, ActorInfo, ActorState } from './stream-protocol.js';
import { activeStates, childIds, sanitizedContext, stateParts, type SnapshotLike } from './actor-state.js';
import { isPlainRecord, plainMembersFit, sanitizeMembers } from './sanitize.js';

/** An actor's next message: its whole state (`change` null: its first), or what changed since the last. */
export type ActorMessage = { version: number; state: ActorState; change: null } | { version: number; state: null; change: ActorChange };

/**
 * What a stream has sent of one actor, so that its next message says only what changed: the state
 * ids, status and children of the last message, and the context it was sanitized from with each
 * top-level key's share of the sanitizer's byte budget. A step that assigns two keys of a context
 * of twenty sanitizes and serializes those two (XState's assign copies the context and replaces the
 * keys it assigns, so the others keep their identity). It moves with each message and keeps no
 * sanitized copy: the page rebuilds the states, and a page that joins gets them from the actors.
 */
export class SentActor {
  version = 0;
  private raw: unknown = undefined;
  private status = '';
  private states: string[] = [];
  private children: Record<string, string> = {};
  /** The snapshot's configuration and children objects the state ids and children were read from. */
  private nodes: unknown = undefined;
  private rawChildren: unknown = undefined;
  /** Each key's share of the byte budget in the last context, when the sanitizer copies it key by key; else null. */
  private costs: Map<string, number> | null = null;
  private total = 0;
  /** Whether the last context was under the byte budget: then its key-wise copy is what `sanitize` gives. */
  private fits = false;
  /** Keys whose value refers back to the context: copied again with every new context, whatever their identity. */
  private readonly ofRecord = new Set<string>();

  constructor(private readonly info: ActorInfo) {}

  /** The actor's next message: whole when it is the first, or when `whole` asks for it (its base is gone from where pages find it). */
  next(snapshot: unknown, whole = false): ActorMessage {
    const s = (snapshot ?? {}) as SnapshotLike;
    const raw = this.info.machineId !== null ? s.context : null;
    this.version += 1;
    if (this.version === 1 || whole) {
      this.costs = null;
      const parts = stateParts(this.info, s);
      this.status = parts.status;
      this.states = parts.states;
      this.children = parts.children;
      this.nodes = s._nodes;
      this.rawChildren = s.children;
      const context: Record<string, unknown> = {};
      const keyed = this.measure(raw, (key, value) => (context[key] = value)) !== null && this.fits;
      return { version: this.version, state: { ...parts, context: keyed ? context : sanitizedContext(raw) }, change: null };
    }
    const change: ActorChange = {};
    const status = typeof s.status === 'string' ? s.status : 'active';
    if (status !== this.status) change.status = this.status = status;
    // XState carries a snapshot's configuration (`_nodes`) and children over by reference while they stay the same.
    if (s._nodes === undefined || s._nodes !== this.nodes) {
      const states = activeStates(this.info, s);
      if (!sameList(states, this.states)) change.states = this.states = states;
      this.nodes = s._nodes;
    }
    if (s._nodes === undefined || s.children !== this.rawChildren) {
      const children = childIds(s);
      if (!sameRecord(children, this.children)) change.children = this.children = children;
      this.rawChildren = s.children;
    }
    if (raw !== this.raw) this.contextChange(raw, change);
    return { version: this.version, state: null, change };
  }

  /** The context's changed keys into `change.set` and `change.unset`; the whole context into `change.context` when keys cannot say it. */
  private contextChange(raw: unknown, change: ActorChange): void {
    const wasKeyed = this.costs !== null && this.fits;
    let set: Record<string, unknown> | undefined;
    let unset: string[] | undefined;
    const gone = this.measure(raw, (key, value) => {
      // A key that is now undefined leaves the JSON: for the page, it is gone.
      if (value === undefined) (unset ??= []).push(key);
      else (set ??= {})[key] = value;
    });
    if (gone === null || !this.fits || !wasKeyed) {
      change.context = sanitizedContext(raw);
      return;
    }
    if (gone.length > 0) (unset ??= []).push(...gone);
    if (set) change.set = set;
    if (unset) change.unset = unset;
  }

  /**
   * Moves to context `raw`: when the sanitizer copies it key by key (`plainMembersFit`), sanitizes each
   * key whose value is not the one it had in the last context (all of them after a whole one), hands
   * it to `each` and keeps its cost; answers the keys gone. Null when it goes whole.
   */
  private measure(raw: unknown, each: (key: string, value: unknown) => void): string[] | null {
    const before = this.costs !== null ? (this.raw as Record<string, unknown>) : null;
    const costs = this.costs ?? new Map<string, number>();
    if (before === null) this.ofRecord.clear();
    this.raw = raw;
    this.costs = null;
    this.fits = false;
    if (!isPlainRecord(raw)) return null;
    const keys = Object.keys(raw);
    if (!plainMembersFit(raw, keys.length, 0)) return null;
    let total = before !== null ? this.total : 0;
    let changed: readonly string[] = keys;
    if (before !== null) {
      const list: string[] = [];
      for (const key of keys) {
        if (!Object.hasOwn(before, key)) list.push(key);
        else if (this.ofRecord.has(key) || !sameMember(before, raw, key)) {
          total -= costs.get(key) ?? 0;
          list.push(key);
        }
      }
      changed = list;
    }
    sanitizeMembers(raw, changed, (key, value, cost, ofRecord) => {
      costs.set(key, cost);
      total += cost;
      if (ofRecord) this.ofRecord.add(key);
      else this.ofRecord.delete(key);
      each(key, value);
    });
    const gone: string[] = [];
    // Every key of `raw` is in `costs`: more entries than keys means some keys are gone.
    if (costs.size > keys.length) {
      for (const [key, cost] of costs) {
        if (Object.hasOwn(raw, key)) continue;
        gone.push(key);
        costs.delete(key);
        this.ofRecord.delete(key);
        total -= cost;
      }
    }
    this.costs = costs;
    this.total = total;
    this.fits = plainMembersFit(raw, keys.length, total);
    return gone;
  }
}

/** Whether a context key holds the same value in both (a getter that throws counts as a change, left to the sanitizer to describe). */
function sameMember(a: Record<string, unknown>, b: Record<string, unknown>, key: string): boolean {
  try {
    return a[key] === b[key];
  } catch {
    return false;
  }
}

function sameList(a: readonly string[], b: readonly string[]): boolean {
  // A configuration met before gives the same list (see `activeStates`).
  if (a === b) return true;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i += 1) if (a[i] !== b[i]) return false;
  return true;
}

function sameRecord(a: Record<string, string>, b: Record<string, string>): boolean {
  const keys = Object.keys(a);
  if (keys.length !== Object.keys(b).length) return false;
  for (const key of keys) if (a[key] !== b[key] || !Object.hasOwn(b, key)) return false;
  return true;
}
