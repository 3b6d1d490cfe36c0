/** How much of a value may leave the host in an inspection message. */
export interface SanitizeLimits {
  /** Characters kept of a string (the rest is replaced by a note of how many were cut). */
  maxString: number;
  /** Items kept of an array, and keys of an object. */
  maxItems: number;
  /** Nesting below this depth is replaced by a note. */
  maxDepth: number;
  /** Approximate JSON bytes of the whole value; past it, further members are replaced by a note. */
  maxBytes: number;
}

export const DEFAULT_LIMITS: SanitizeLimits = { maxString: 2_000, maxItems: 50, maxDepth: 6, maxBytes: 32_768 };

const SECRET_WORDS = new Set(['password', 'passwd', 'passphrase', 'secret', 'authorization', 'auth', 'cookie', 'credential', 'credentials', 'apikey']);
const KEY_OWNERS = new Set(['api', 'private', 'secret', 'access', 'session', 'signing', 'encryption']);

export const REDACTED = '[redacted]';

/**
 * Whether a key's value looks like a credential and is redacted: `apiKey`, `access_token`,
 * `Authorization`, `password`, `clientSecret`, … Judged on the key's words, so that counts such
 * as `inputTokens` or `maxOutputTokens` stay visible while `token` and `refreshToken` do not.
 */
export function isSecretKey(key: string): boolean {
  let secret = judged.get(key);
  if (secret === undefined) {
    secret = judgeKey(key);
    // Contexts use the same few keys again and again; an unbounded set of keys (a map keyed by ids) must not grow this.
    if (judged.size >= 10_000) judged.clear();
    judged.set(key, secret);
  }
  return secret;
}

const judged = new Map<string, boolean>();

function judgeKey(key: string): boolean {
  const words = key
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((w) => w !== '');
  const last = words.at(-1);
  if (last === undefined) return false;
  if (words.some((w) => SECRET_WORDS.has(w))) return true;
  if (last === 'token' || last === 'jwt' || last === 'bearer') return true;
  return last === 'key' && words.length > 1 && KEY_OWNERS.has(words.at(-2)!);
}

/**
 * A JSON-safe copy of a context or event value for the inspector: strings, arrays, objects and
 * depth capped, the whole kept under a byte budget, and the values of keys that look like
 * credentials replaced. Functions, symbols and actor references become short descriptions;
 * cycles are cut. The original is never changed.
 */
export function sanitize(value: unknown, limits: SanitizeLimits = DEFAULT_LIMITS): unknown {
  const budget = { left: limits.maxBytes };
  try {
    return copy(value, limits, budget, 0, new Set());
  } catch {
    return '[unreadable]';
  }
}

function copy(value: unknown, limits: SanitizeLimits, budget: { left: number }, depth: number, seen: Set<object>): unknown {
  if (budget.left <= 0) return '[over size limit]';
  switch (typeof value) {
    case 'string': {
      const text = redactedJsonText(value, limits);
      const kept = text.length > limits.maxString ? `${text.slice(0, limits.maxString)}… [${text.length - limits.maxString} more characters]` : text;
      budget.left -= kept.length + 2;
      return kept;
    }
    case 'number':
      budget.left -= 8;
      return Number.isFinite(value) ? value : String(value);
    case 'boolean':
      budget.left -= 5;
      return value;
    case 'bigint':
      budget.left -= 20;
      return `${value.toString()}n`;
    case 'undefined':
      return undefined;
    case 'function':
      budget.left -= 20;
      return `[function ${value.name || 'anonymous'}]`;
    case 'symbol':
      budget.left -= 20;
      return `[${value.toString()}]`;
  }
  if (value === null) {
    budget.left -= 4;
    return null;
  }
  return copyObject(value as object, limits, budget, depth, seen);
}

/**
 * Text that is a JSON object or array (a tool call's `argumentsText`, say) is redacted inside too:
 * a credential passed as a tool argument is still a credential.
 */
function redactedJsonText(text: string, limits: SanitizeLimits): string {
  const first = text.charCodeAt(0);
  if (first !== 123 && first !== 91) return text; // '{' or '['
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return text;
  }
  if (typeof parsed !== 'object' || parsed === null) return text;
  return JSON.stringify(copy(parsed, { ...limits, maxString: Number.MAX_SAFE_INTEGER }, { left: Number.MAX_SAFE_INTEGER }, 0, new Set()));
}

function copyObject(value: object, limits: SanitizeLimits, budget: { left: number }, depth: number, seen: Set<object>): unknown {
  if (seen.has(value)) return '[circular]';
  if (depth >= limits.maxDepth) return Array.isArray(value) ? `[array of ${value.length}]` : '[object]';
  const actor = actorDescription(value);
  if (actor !== null) return actor;
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? 'Invalid Date' : value.toISOString();
  if (value instanceof Error) return { name: value.name, message: copy(value.message, limits, budget, depth + 1, seen) };
  if (value instanceof Map) return copyObject(Object.fromEntries(value), limits, budget, depth, seen);
  if (value instanceof Set) return copyObject([...value], limits, budget, depth, seen);
  if (ArrayBuffer.isView(value)) return `[${value.constructor.name} of ${value.byteLength} bytes]`;
  seen.add(value);
  try {
    return Array.isArray(value) ? copyArray(value, limits, budget, depth, seen) : copyRecord(value, limits, budget, depth, seen);
  } finally {
    seen.delete(value);
  }
}

function copyArray(value: unknown[], limits: SanitizeLimits, budget: { left: number }, depth: number, seen: Set<object>): unknown[] {
  const out: unknown[] = [];
  budget.left -= 2;
  const n = Math.min(value.length, limits.maxItems);
  for (let i = 0; i < n; i += 1) {
    if (budget.left <= 0) {
      out.push(`[${value.length - i} more items over size limit]`);
      return out;
    }
    out.push(copy(value[i], limits, budget, depth + 1, seen) ?? null);
  }
  if (value.length > n) out.push(`[${value.length - n} more items]`);
  return out;
}

function copyRecord(value: object, limits: SanitizeLimits, budget: { left: number }, depth: number, seen: Set<object>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  budget.left -= 2;
  let keys: string[];
  try {
    keys = Object.keys(value);
  } catch {
    return { '[unreadable]': true };
  }
  const n = Math.min(keys.length, limits.maxItems);
  for (let i = 0; i < n; i += 1) {
    const key = keys[i]!;
    if (budget.left <= 0) {
      out['…'] = `${keys.length - i} more keys over size limit`;
      return out;
    }
    budget.left -= key.length + 4;
    out[key] = isSecretKey(key) ? REDACTED : read(value, key, limits, budget, depth, seen);
  }
  if (keys.length > n) out['…'] = `${keys.length - n} more keys`;
  return out;
}

/** A getter that throws (or a revoked proxy) is described, not rethrown: inspection never breaks the host. */
function read(value: object, key: string, limits: SanitizeLimits, budget: { left: number }, depth: number, seen: Set<object>): unknown {
  try {
    return copy((value as Record<string, unknown>)[key], limits, budget, depth + 1, seen);
  } catch {
    return '[unreadable]';
  }
}

/** An actor reference in a context or event is shown by its id, not walked into. */
function actorDescription(value: object): string | null {
  const ref = value as { sessionId?: unknown; send?: unknown; getSnapshot?: unknown; id?: unknown };
  if (typeof ref.send === 'function' && typeof ref.getSnapshot === 'function' && typeof ref.sessionId === 'string') {
    return `[actor ${typeof ref.id === 'string' ? ref.id : ref.sessionId}]`;
  }
  return null;
}
