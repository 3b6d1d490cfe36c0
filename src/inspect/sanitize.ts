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

const DEFAULT_LIMITS: SanitizeLimits = { maxString: 2_000, maxItems: 50, maxDepth: 6, maxBytes: 32_768 };

/**
 * How a key's value is judged. `all`: a credential whatever it holds (`password`, `apiKey`,
 * `accessToken`, `dsn`, …). `strings`: a key that names a credential as often as something else
 * (`key`, `keys`, `tokens`, `pass`, `sshKey`, …) — its strings are redacted, at any depth below it,
 * but its numbers, booleans and nulls stay: a `tokens: 1200` is a count, a `pass: true` a verdict,
 * and neither is a secret, while a `tokens: "ghp_…"` or a `key: "sk-…"` is. `none`: anything else,
 * so counts such as `inputTokens` or `maxOutputTokens` stay visible.
 */
export type KeySecrecy = 'none' | 'strings' | 'all';

/** A key with any of these words is a credential. */
const SECRET_WORDS = new Set([
  'password', 'passwd', 'passphrase', 'pwd', 'secret', 'secrets', 'authorization', 'auth', 'cookie', 'cookies',
  'credential', 'credentials', 'apikey', 'apikeys', 'privatekey', 'dsn',
]);
/** A key of one word that ends so (`accesstoken`, `clientsecret`, `dbpassword`) is a credential too. */
const SECRET_ENDINGS = ['token', 'secret', 'password', 'passwd', 'pwd', 'apikey', 'privatekey'];
/** `<owner> key`, `<owner> keys`, `<owner> tokens`: a credential. */
const KEY_OWNERS = new Set(['api', 'private', 'secret', 'access', 'session', 'signing', 'encryption', 'refresh', 'auth', 'oauth', 'bearer', 'id', 'csrf']);
/** `<kind> key` that names no credential: a `cacheKey` or `sortKey` stays visible; any other `…Key` is `strings`. */
const PLAIN_KEY_KINDS = new Set(['public', 'cache', 'sort', 'primary', 'foreign', 'partition', 'routing', 'idempotency', 'dedup', 'dedupe', 'lookup', 'index', 'row', 'group', 'part', 'map', 'unique', 'hot', 'short']);

export const REDACTED = '[redacted]';

/**
 * Whether a key's value looks like a credential and is redacted (wholly or its strings): `apiKey`,
 * `access_token`, `Authorization`, `password`, `pwd`, `dsn`, `clientSecret`, `api_keys`, `key`, … Judged
 * on the key's words, so that counts such as `inputTokens` or `maxOutputTokens` stay visible.
 */
export function isSecretKey(key: string): boolean {
  return keySecrecy(key) !== 'none';
}

/** How the value of `key` is redacted (see {@link KeySecrecy}). */
export function keySecrecy(key: string): KeySecrecy {
  let secrecy = judged.get(key);
  if (secrecy === undefined) {
    secrecy = judgeKey(key);
    // Contexts use the same few keys again and again; an unbounded set of keys (a map keyed by ids) must not grow this.
    if (judged.size >= 10_000) judged.clear();
    judged.set(key, secrecy);
  }
  return secrecy;
}

const judged = new Map<string, KeySecrecy>();

function judgeKey(key: string): KeySecrecy {
  const words = key
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((w) => w !== '');
  const last = words.at(-1);
  if (last === undefined) return 'none';
  if (words.some((w) => SECRET_WORDS.has(w))) return 'all';
  if (last === 'token' || last === 'jwt' || last === 'bearer') return 'all';
  if (words.length === 1 && SECRET_ENDINGS.some((ending) => last.endsWith(ending))) return 'all';
  const owner = words.at(-2);
  if (last === 'key' || last === 'keys') {
    if (owner === undefined) return 'strings';
    if (KEY_OWNERS.has(owner)) return 'all';
    return PLAIN_KEY_KINDS.has(owner) ? 'none' : 'strings';
  }
  if (last === 'tokens') {
    // `inputTokens`, `maxOutputTokens`, `cachedInputTokens`: counts. `accessTokens`: credentials.
    if (owner === undefined) return 'strings';
    return KEY_OWNERS.has(owner) ? 'all' : 'none';
  }
  if (last === 'pass') return 'strings';
  // `inputtokens`, written as one word: strings only, so its count still shows.
  if (words.length === 1 && last.endsWith('tokens')) return 'strings';
  return 'none';
}

/**
 * A JSON-safe copy of a context or event value for the inspector: strings, arrays, objects and
 * depth capped, the whole kept under a byte budget, and credentials replaced by `[redacted]` — the
 * values of keys that look like credentials, at any depth, and inside every string: a key's value
 * written as JSON, `key=value` or `key: value` in text (a tool call's arguments, the loop detector's
 * signature, a tool's output), and the password of a URL (`postgres://u:[redacted]@h/db`).
 * Functions, symbols and actor references become short descriptions; cycles are cut. The original
 * is never changed.
 */
export function sanitize(value: unknown, limits: SanitizeLimits = DEFAULT_LIMITS): unknown {
  const budget = { left: limits.maxBytes };
  try {
    return copy(value, limits, budget, 0, new Set(), false);
  } catch {
    return '[unreadable]';
  }
}

type Budget = { left: number };

/**
 * Members of a plain object as `sanitize(record)` copies them, each handed to `each` with what it
 * takes of the byte budget, its key included, and whether its copy depends on the record (it refers
 * back to it: `[circular]` there). While a record's members take less than `maxBytes` in all (see
 * {@link plainMembersFit}), `sanitize(record)` is exactly its members copied one by one so — the budget
 * runs out for none — and a context whose assign changed two keys needs only those two copied.
 */
export function sanitizeMembers(
  record: object,
  keys: Iterable<string>,
  each: (key: string, value: unknown, cost: number, ofRecord: boolean) => void,
  limits: SanitizeLimits = DEFAULT_LIMITS,
): void {
  // As members of `record` at depth 0: a value that refers back to the record is a cycle.
  const seen = new RecordSeen(record);
  const budget = { left: limits.maxBytes };
  for (const key of keys) {
    const secrecy = keySecrecy(key);
    const keyCost = key.length + 4;
    if (secrecy === 'all') {
      each(key, REDACTED, keyCost, false);
      continue;
    }
    budget.left = limits.maxBytes;
    seen.reached = false;
    const value = read(record, key, limits, budget, 0, seen, secrecy === 'strings');
    each(key, value, keyCost + limits.maxBytes - budget.left, seen.reached);
  }
}

/**
 * The objects being walked, from a record: notes whether the walk came back to the record, so the
 * member's copy (`[circular]` there) depends on its record — the same value in another record is
 * copied otherwise.
 */
class RecordSeen extends Set<object> {
  reached = false;

  constructor(private readonly record: object) {
    super([record]);
  }

  override has(value: object): boolean {
    if (value !== this.record) return super.has(value);
    this.reached = true;
    return true;
  }
}

/**
 * Whether `sanitize(value)` copies `value` member by member as {@link sanitizeMembers} does, for a
 * value `isPlainRecord` accepted (not an array, a Date, a Map or an actor, which it copies
 * otherwise): at most `maxItems` keys, whose members' costs add up (with its braces) to `total`,
 * under the byte budget.
 */
export function plainMembersFit(value: object, keyCount: number, total: number, limits: SanitizeLimits = DEFAULT_LIMITS): boolean {
  // An own `__proto__` key (JSON.parse makes one) is set as the copy's prototype by `copyRecord`, not kept: left to it.
  return keyCount <= limits.maxItems && RECORD_BRACES + total < limits.maxBytes && !Object.hasOwn(value, '__proto__');
}

/** What `copyRecord` takes of the budget for a record's own braces. */
const RECORD_BRACES = 2;

/** An object `sanitize` walks key by key: its prototype is Object's or none, and it is no actor. */
export function isPlainRecord(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null) return false;
  const proto = Object.getPrototypeOf(value) as unknown;
  return (proto === Object.prototype || proto === null) && actorDescription(value) === null;
}

/** `strings`: below a key whose strings are secret (a `strings` key): every string is redacted. */
function copy(value: unknown, limits: SanitizeLimits, budget: Budget, depth: number, seen: Set<object>, strings: boolean): unknown {
  if (budget.left <= 0) return '[over size limit]';
  switch (typeof value) {
    case 'string': {
      if (strings) {
        budget.left -= REDACTED.length + 2;
        return REDACTED;
      }
      const kept = keptString(value, limits);
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
  return copyObject(value as object, limits, budget, depth, seen, strings);
}

/** How deep a URL's authority (`user:password@host:port`) is read. */
const MAX_AUTHORITY = 256;

/**
 * Past the characters a string keeps, the scan looks this much further, so what is kept is judged
 * with what follows it: a value that starts in the kept part and runs on past the window is
 * redacted to the window's end, and a URL that starts in it has its authority read as deep as any.
 */
const SCAN_MARGIN = MAX_AUTHORITY + 256;

/**
 * A string as it leaves: its credentials redacted, then cut at `maxString`. Text that is a JSON
 * object or array (a tool call's `argumentsText`, say) is parsed and copied as any value — a
 * credential passed as a tool argument is still a credential. Any other text is scanned (see
 * {@link redactedText}) only as deep as it is kept, plus a margin: a 5 MB tool output costs what
 * its first few KiB cost.
 */
function keptString(text: string, limits: SanitizeLimits): string {
  const first = text.charCodeAt(0);
  let redacted: string | null = null;
  let unscanned = 0;
  if (first === LBRACE || first === LBRACKET) {
    const known = recentJsonText(text, limits);
    if (known !== null) return known;
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = undefined;
    }
    if (typeof parsed === 'object' && parsed !== null) {
      redacted = JSON.stringify(copy(parsed, { ...limits, maxString: Number.MAX_SAFE_INTEGER }, { left: Number.MAX_SAFE_INTEGER }, 0, new Set(), false));
    }
  }
  if (redacted === null) {
    const window = limits.maxString + SCAN_MARGIN;
    if (text.length > window) unscanned = text.length - window;
    redacted = scannedText(text, window);
  }
  const kept = redacted.length <= limits.maxString && unscanned === 0 ? redacted : cutString(redacted, limits.maxString, unscanned);
  if (first === LBRACE || first === LBRACKET) rememberJsonText(text, limits, kept);
  return kept;
}

function cutString(redacted: string, maxString: number, unscanned: number): string {
  const shown = redacted.slice(0, maxString);
  return `${shown}… [${redacted.length - shown.length + unscanned} more characters]`;
}

/**
 * The last few texts that start as JSON, with what they were kept as: a tool call's
 * `argumentsText` reaches the inspector as the same string in the model's response, the turn's
 * context, the tool call's input and its context — each time parsed, copied and written again
 * otherwise. Looked up with `===`, as `recentScans`; a text's result depends on the limits too.
 */
const recentJson: { text: string; limits: SanitizeLimits; kept: string }[] = [];

function recentJsonText(text: string, limits: SanitizeLimits): string | null {
  if (text.length > REMEMBERED_LENGTH.max) return null;
  for (const seen of recentJson) if (seen.text === text && seen.limits === limits) return seen.kept;
  return null;
}

function rememberJsonText(text: string, limits: SanitizeLimits, kept: string): void {
  if (text.length > REMEMBERED_LENGTH.max) return;
  if (recentJson.length >= RECENT_SCANS) recentJson.shift();
  recentJson.push({ text, limits, kept });
}

/**
 * The last few long texts scanned, with what the scan gave: one tool output reaches the inspector
 * as the same string in several events, contexts and updates, one after the other. Looked up with
 * `===`, never hashed: the same string is equal at once, another mostly differs in length.
 */
const recentScans: { text: string; window: number; redacted: string }[] = [];
const RECENT_SCANS = 16;
const REMEMBERED_LENGTH = { min: 1_024, max: 65_536 };

function scannedText(text: string, window: number): string {
  const remembered = text.length >= REMEMBERED_LENGTH.min && text.length <= REMEMBERED_LENGTH.max;
  if (remembered) for (const scan of recentScans) if (scan.text === text && scan.window === window) return scan.redacted;
  const redacted = text.length > window ? redactedText(text.slice(0, window), true) : redactedText(text);
  if (remembered) {
    if (recentScans.length >= RECENT_SCANS) recentScans.shift();
    recentScans.push({ text, window, redacted });
  }
  return redacted;
}

const DQUOTE = 34;
const SQUOTE = 39;
const BACKTICK = 96;
const BACKSLASH = 92;
const COLON = 58;
const SLASH = 47;
const EQUALS = 61;
const LBRACE = 123;
const RBRACE = 125;
const LBRACKET = 91;
const RBRACKET = 93;

/** A key's name that may be judged secret holds one of these words (see `SECRET_WORDS`, `judgeKey`). */
const SECRET_STEMS = /pass|pwd|secret|auth|cookie|credential|key|token|jwt|bearer|dsn/i;

/** How far back from its `:` or `=` a key's name is read: longer names are not judged. */
const MAX_KEY_REACH = 64;

/** Backslashes counted before a key's quotes: JSON inside JSON inside JSON is 3, 7 a level deeper. */
const MAX_ESCAPES = 15;

interface Edit {
  from: number;
  to: number;
  text: string;
}

/**
 * Text with its credentials redacted, found anywhere in it in one linear pass:
 * - a key's value, the key judged as an object's key is: JSON (`"apiKey": "…"`, also escaped inside
 *   a JSON string, `\"apiKey\":\"…\"`, and as a JSON object or array `"auth": {…}`), an assignment
 *   (`API_KEY=…`, `--password=…`, `?token=…&`), or a `key: value` line (`Authorization: Bearer …`,
 *   `password: hunter2`, `{ apiKey: '…' }`);
 * - the password of a URL's user information: `postgres://u:secret@h/db` → `postgres://u:[redacted]@h/db`.
 * Every position is looked at a bounded number of times (a value's end is searched once, and the
 * scan goes on after it), so hostile text costs time linear in its length. `cut`: the text is the
 * start of a longer one, so a URL that runs to its end may go on.
 */
export function redactedText(text: string, cut = false): string {
  // Every form has a ':' or a '='; most strings of a context (ids, names, states) have neither.
  if (text.length < 4) return text;
  let colon = text.indexOf(':');
  let equals = text.indexOf('=');
  if (colon === -1 && equals === -1) return text;
  const edits: Edit[] = [];
  // Separators are found by the engine's own search; only the text around each is looked at here.
  for (let at = 0; ; ) {
    if (colon !== -1 && colon < at) colon = text.indexOf(':', at);
    if (equals !== -1 && equals < at) equals = text.indexOf('=', at);
    const separator = colon === -1 ? equals : equals === -1 ? colon : Math.min(colon, equals);
    if (separator === -1) break;
    at = Math.max(separator + 1, afterSeparator(text, separator, edits.at(-1)?.to ?? 0, cut, edits));
  }
  if (edits.length === 0) return text;
  let out = '';
  let from = 0;
  for (const edit of edits) {
    out += text.slice(from, edit.from) + edit.text;
    from = edit.to;
  }
  return out + text.slice(from);
}

function isKeyChar(c: number): boolean {
  return (c >= 97 && c <= 122) || (c >= 65 && c <= 90) || (c >= 48 && c <= 57) || c === 95 || c === 45 || c === 46; // a-z A-Z 0-9 _ - .
}

function isBlank(c: number): boolean {
  return c === 32 || c === 9;
}

function skipBlanks(text: string, at: number): number {
  while (at < text.length && isBlank(text.charCodeAt(at))) at += 1;
  return at;
}

/** The number of backslashes just before `at` (not looking before `floor`). */
function backslashesBefore(text: string, at: number, floor: number): number {
  let n = 0;
  while (at - n - 1 >= floor && text.charCodeAt(at - n - 1) === BACKSLASH) n += 1;
  return n;
}

/**
 * The closing quote of a string whose opening quote had `escapes` backslashes before it (0 in
 * plain JSON, 1 in JSON inside a JSON string, 3 a level deeper): the index where its backslashes
 * start, or -1. A quote with `escapes` backslashes plus an even run of escaped backslashes closes.
 */
function closingQuote(text: string, from: number, quote: number, escapes: number): number {
  const q = String.fromCharCode(quote);
  for (let at = text.indexOf(q, from); at !== -1; at = text.indexOf(q, at + 1)) {
    const run = backslashesBefore(text, at, from);
    if (run >= escapes && (run - escapes) % (2 * (escapes + 1)) === 0) return at - escapes;
  }
  return -1;
}

/** A redaction written as the text around it writes a string: quoted, escaped as deep as it. */
function quotedRedaction(escapes: number): string {
  const quote = `${'\\'.repeat(escapes)}"`;
  return `${quote}${REDACTED}${quote}`;
}

/**
 * The `:` or `=` at `at`, and the key's name before it (not looking before `floor`, the end of the
 * last redaction): the value after it is redacted when the key is judged secret. A `://` is a URL's.
 * Answers where the scan goes on.
 */
function afterSeparator(text: string, at: number, floor: number, cut: boolean, edits: Edit[]): number {
  const separator = text.charCodeAt(at);
  const next = text.charCodeAt(at + 1);
  if (separator === COLON) {
    if (next === SLASH && text.charCodeAt(at + 2) === SLASH) return urlPassword(text, at + 3, cut, edits);
    if (next === COLON) return at + 2; // `a::b`
  } else if (next === EQUALS || next === 62) {
    return at + 2; // `==`, `=>`
  }
  let k = at;
  while (k > floor && at - k < 16 && isBlank(text.charCodeAt(k - 1))) k -= 1;
  // A quoted key ("apiKey": …, 'apiKey': …, \"apiKey\": … inside a JSON string): its opening quote is escaped as its closing one.
  const quote = k > floor ? text.charCodeAt(k - 1) : 0;
  let escapes = -1;
  let end = k;
  if (quote === DQUOTE || quote === SQUOTE) {
    if (separator !== COLON) return at + 1;
    escapes = backslashesBefore(text, k - 1, Math.max(floor, k - 1 - MAX_ESCAPES));
    end = k - 1 - escapes;
  }
  let start = end;
  while (start > floor && end - start < MAX_KEY_REACH && isKeyChar(text.charCodeAt(start - 1))) start -= 1;
  if (start === end || (start > floor && isKeyChar(text.charCodeAt(start - 1)))) return at + 1;
  if (escapes >= 0 && (start - 1 < floor || text.charCodeAt(start - 1) !== quote || backslashesBefore(text, start - 1, Math.max(floor, start - 1 - MAX_ESCAPES)) !== escapes)) return at + 1;
  const key = text.slice(start, end);
  if (!SECRET_STEMS.test(key)) return at + 1;
  const secrecy = keySecrecy(key);
  if (secrecy === 'none') return at + 1;
  const form = escapes >= 0 ? 'json' : separator === COLON ? 'line' : 'assign';
  // `"Authorization: Bearer …"`: a line that a quote opened ends at its closing quote.
  const opened = escapes < 0 && start > floor ? text.charCodeAt(start - 1) : 0;
  const stop = opened === DQUOTE || opened === SQUOTE || opened === BACKTICK ? opened : -1;
  return redactValue(text, skipBlanks(text, at + 1), secrecy, form, Math.max(escapes, 0), stop, edits);
}

/** Redacts the value starting at `at`; answers where it ends. */
function redactValue(text: string, at: number, secrecy: KeySecrecy, form: 'json' | 'assign' | 'line', escapes: number, stop: number, edits: Edit[]): number {
  const n = text.length;
  if (at >= n) return at;
  let run = 0;
  while (at + run < n && text.charCodeAt(at + run) === BACKSLASH) run += 1;
  const first = text.charCodeAt(at + run);
  if (first === DQUOTE || first === SQUOTE || first === BACKTICK) {
    const from = at + run + 1;
    const close = closingQuote(text, from, first, run);
    const to = close === -1 ? n : close;
    if (to > from) edits.push({ from, to, text: REDACTED });
    return close === -1 ? n : close + run + 1;
  }
  if (run === 0 && (first === LBRACE || first === LBRACKET)) return redactStructure(text, at, secrecy, escapes, edits);
  const to = bareEnd(text, at, form, stop);
  if (to === at) return at;
  if (secrecy === 'strings' && isPlainScalar(text, at, to)) return to;
  edits.push({ from: at, to, text: form === 'json' ? quotedRedaction(escapes) : REDACTED });
  return to;
}

/**
 * Where an unquoted value ends: a JSON scalar at `,` `}` `]`, an assignment at a blank, `&`, `;` or
 * a quote, a line at its end (or at `stop`, the quote it is in).
 */
function bareEnd(text: string, at: number, form: 'json' | 'assign' | 'line', stop: number): number {
  const n = text.length;
  let to = at;
  for (; to < n; to += 1) {
    const c = text.charCodeAt(to);
    if (c === 10 || c === 13) break;
    if (form === 'line') {
      if (c === stop) break;
      continue;
    }
    if (c === 32 || c === 9 || c === DQUOTE || c === SQUOTE || c === BACKSLASH) break;
    if (form === 'json' ? c === 44 || c === RBRACE || c === RBRACKET : c === 38 || c === 59 || c === 60 || c === 62) break; // , } ]  or  & ; < >
  }
  return to;
}

const PLAIN_SCALAR = /^(?:[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|true|false|null)$/;

/** A value whose first word is a number, a boolean or null: what a `strings` key keeps. */
function isPlainScalar(text: string, from: number, to: number): boolean {
  let end = from;
  while (end < to && end - from < 40 && !isBlank(text.charCodeAt(end)) && text.charCodeAt(end) !== 44) end += 1;
  return PLAIN_SCALAR.test(text.slice(from, end));
}

/**
 * A JSON object or array as a key's value, found by its brackets outside its strings: wholly
 * redacted under an `all` key; under a `strings` key its strings are (not its keys, numbers or
 * booleans). Unclosed, it runs to the end of the text.
 */
function redactStructure(text: string, at: number, secrecy: KeySecrecy, escapes: number, edits: Edit[]): number {
  const n = text.length;
  const inner: Edit[] = [];
  let depth = 0;
  let i = at;
  while (i < n) {
    const c = text.charCodeAt(i);
    if (c === DQUOTE && backslashesBefore(text, i, at) === escapes) {
      const close = closingQuote(text, i + 1, DQUOTE, escapes);
      if (close === -1) {
        if (secrecy === 'strings') inner.push({ from: i + 1, to: n, text: REDACTED });
        i = n;
        break;
      }
      const after = skipBlanks(text, close + escapes + 1);
      if (secrecy === 'strings' && text.charCodeAt(after) !== COLON && close > i + 1) inner.push({ from: i + 1, to: close, text: REDACTED });
      i = close + escapes + 1;
      continue;
    }
    if (c === LBRACE || c === LBRACKET) depth += 1;
    else if (c === RBRACE || c === RBRACKET) {
      depth -= 1;
      if (depth === 0) {
        i += 1;
        break;
      }
    }
    i += 1;
  }
  if (secrecy === 'all') edits.push({ from: at, to: i, text: quotedRedaction(escapes) });
  else edits.push(...inner);
  return i;
}

/** The end of a URL's authority before `limit`: `/`, `?`, `#` (unless `pastSlash`), a blank, a quote or a bracket. */
function authorityEnd(text: string, from: number, limit: number, pastSlash: boolean): number {
  let at = from;
  for (; at < limit; at += 1) {
    const c = text.charCodeAt(at);
    if (c <= 32 || c === DQUOTE || c === SQUOTE || c === BACKTICK || c === BACKSLASH || c === 60 || c === 62) break;
    if (!pastSlash && (c === 47 || c === 63 || c === 35)) break; // / ? #
  }
  return at;
}

/**
 * After a URL's `://`: the password of its user information (`user:password@host`) is redacted.
 * A password that holds an unescaped `/`, `?` or `#` is found too, through the last `@` before the
 * URL ends; an authority that goes on past what is read (longer than `MAX_AUTHORITY`, or cut) has
 * everything after its first `:` redacted. A user name alone (`git@host`) stays. Answers where the
 * scan goes on: the host, so a query's `token=` is still seen.
 */
function urlPassword(text: string, from: number, cut: boolean, edits: Edit[]): number {
  const limit = Math.min(text.length, from + MAX_AUTHORITY);
  const host = authorityEnd(text, from, limit, false);
  let at = lastAt(text, from, host);
  if (at === -1) {
    if (host === limit && (limit < text.length || cut)) at = host;
    else {
      at = lastAt(text, host, authorityEnd(text, from, limit, true));
      if (at === -1) return from;
    }
  }
  const colon = text.indexOf(':', from);
  if (colon === -1 || colon >= Math.min(at, host)) return from;
  if (at > colon + 1 && text.slice(colon + 1, at) !== REDACTED) edits.push({ from: colon + 1, to: at, text: REDACTED });
  return at;
}

/** The last `@` in [from, to), or -1: a bounded look, where `lastIndexOf` could walk back to the text's start. */
function lastAt(text: string, from: number, to: number): number {
  for (let at = to - 1; at >= from; at -= 1) if (text.charCodeAt(at) === 64) return at;
  return -1;
}

function copyObject(value: object, limits: SanitizeLimits, budget: Budget, depth: number, seen: Set<object>, strings: boolean): unknown {
  if (seen.has(value)) return '[circular]';
  if (depth >= limits.maxDepth) return Array.isArray(value) ? `[array of ${value.length}]` : '[object]';
  const actor = actorDescription(value);
  if (actor !== null) return actor;
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? 'Invalid Date' : value.toISOString();
  if (value instanceof Error) return { name: value.name, message: copy(value.message, limits, budget, depth + 1, seen, strings) };
  if (value instanceof Map) return copyObject(Object.fromEntries(value), limits, budget, depth, seen, strings);
  if (value instanceof Set) return copyObject([...value], limits, budget, depth, seen, strings);
  if (ArrayBuffer.isView(value)) return `[${value.constructor.name} of ${value.byteLength} bytes]`;
  seen.add(value);
  try {
    return Array.isArray(value) ? copyArray(value, limits, budget, depth, seen, strings) : copyRecord(value, limits, budget, depth, seen, strings);
  } finally {
    seen.delete(value);
  }
}

function copyArray(value: unknown[], limits: SanitizeLimits, budget: Budget, depth: number, seen: Set<object>, strings: boolean): unknown[] {
  const out: unknown[] = [];
  budget.left -= 2;
  const n = Math.min(value.length, limits.maxItems);
  for (let i = 0; i < n; i += 1) {
    if (budget.left <= 0) {
      out.push(`[${value.length - i} more items over size limit]`);
      return out;
    }
    out.push(copy(value[i], limits, budget, depth + 1, seen, strings) ?? null);
  }
  if (value.length > n) out.push(`[${value.length - n} more items]`);
  return out;
}

function copyRecord(value: object, limits: SanitizeLimits, budget: Budget, depth: number, seen: Set<object>, strings: boolean): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  budget.left -= RECORD_BRACES;
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
    const secrecy = keySecrecy(key);
    out[key] = secrecy === 'all' ? REDACTED : read(value, key, limits, budget, depth, seen, strings || secrecy === 'strings');
  }
  if (keys.length > n) out['…'] = `${keys.length - n} more keys`;
  return out;
}

/** A getter that throws (or a revoked proxy) is described, not rethrown: inspection never breaks the host. */
function read(value: object, key: string, limits: SanitizeLimits, budget: Budget, depth: number, seen: Set<object>, strings: boolean): unknown {
  try {
    return copy((value as Record<string, unknown>)[key], limits, budget, depth + 1, seen, strings);
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
