import fc from 'fast-check';

/**
 * Hostile values for in-process commands. Proxies and throwing getters would trip fast-check
 * itself (it probes every value it generates), so each value is a recipe: a label fast-check prints
 * and shrinks by, and `make`, which builds the value inside the run.
 */
export class Hostile {
  constructor(
    readonly label: string,
    readonly make: () => unknown,
  ) {}

  [fc.toStringMethod](): string {
    return this.label;
  }
}

const boom = (what: string) => () => {
  throw new Error(`hostile ${what}`);
};

export const HUGE_STRING = 'x'.repeat(2 * 1024 * 1024);

/** Strings that are legal JavaScript but no id or text should be taken for granted with. */
export const SPECIAL_STRINGS: readonly string[] = [
  '',
  ' ',
  '\0',
  'a\0b',
  '\uD800',
  'a\uDC00b',
  '\uDBFF\uDBFF',
  '__proto__',
  'constructor',
  'prototype',
  'toString',
  'hasOwnProperty',
  '..',
  '../../etc/passwd',
  '%00',
  '\u202Eevil',
  '\uFEFF',
  '🎉'.repeat(60),
  'ß'.repeat(201),
  'x'.repeat(200),
  'x'.repeat(201),
  'x'.repeat(70_000),
  HUGE_STRING,
  'ask',
  'allow_once',
];

export const SPECIAL_NUMBERS: readonly number[] = [
  NaN,
  Infinity,
  -Infinity,
  -0,
  0,
  -1,
  0.5,
  1e308,
  -1e308,
  Number.MAX_VALUE,
  Number.MIN_VALUE,
  Number.MAX_SAFE_INTEGER,
  Number.MAX_SAFE_INTEGER + 2,
  2 ** 31,
  2 ** 53 + 1,
];

/** Nested `levels` deep, alternating objects and arrays. */
export function deep(levels: number): unknown {
  let value: unknown = 'bottom';
  for (let i = 0; i < levels; i++) value = i % 2 === 0 ? { next: value } : [value];
  return value;
}

/** Objects that attack the reader rather than the schema. */
const EXOTIC: readonly [string, () => unknown][] = [
  ['throwing getters', () => Object.defineProperties({}, Object.fromEntries(['clientRequestId', 'input', 'turnId', 'toolCallId', 'decision', 'from', 'text', 'agent', 'permissionMode', 'workspaceDir', 'busyPolicy', 'mode', 'type', 'name'].map((k) => [k, { get: boom(`getter ${k}`), enumerable: true }])))],
  ['proxy whose every trap throws', () => new Proxy({}, trapsThat(boom('trap')))],
  ['array proxy whose every trap throws', () => new Proxy([], trapsThat(boom('array trap')))],
  ['revoked proxy', () => revoked({})],
  ['revoked array proxy', () => revoked([])],
  ['throwing toString/valueOf/toPrimitive', () => ({ toString: boom('toString'), valueOf: boom('valueOf'), [Symbol.toPrimitive]: boom('toPrimitive'), toJSON: boom('toJSON') })],
  ['polluting __proto__ (JSON)', () => JSON.parse('{"__proto__":{"polluted":true},"constructor":{"prototype":{"polluted":true}}}') as unknown],
  ['null prototype', () => Object.create(null) as unknown],
  ['function', () => () => 'ask'],
  ['class', () => class Ask {}],
  ['symbol', () => Symbol('ask')],
  ['bigint', () => 10n ** 30n],
  ['boxed string', () => new String('ask')],
  ['invalid date', () => new Date(NaN)],
  ['deep 5 000', () => deep(5_000)],
  ['deep 100 000', () => deep(100_000)],
  ['sparse array of length 2**32-1', () => Object.assign([], { length: 2 ** 32 - 1 })],
  ['array of 200 000 nulls', () => new Array(200_000).fill(null)],
  ['self-referencing object', () => selfReferencing()],
  ['frozen empty object', () => Object.freeze({})],
  ['Map', () => new Map([['mode', 'ask']])],
  ['Promise', () => Promise.resolve('ask')],
  ['promise that rejects', () => rejected()],
  ['thenable that throws', () => ({ then: boom('then') })],
];

function trapsThat(thrower: () => never): ProxyHandler<object> {
  const traps = ['get', 'set', 'has', 'ownKeys', 'getOwnPropertyDescriptor', 'getPrototypeOf', 'defineProperty', 'deleteProperty', 'isExtensible', 'preventExtensions', 'setPrototypeOf', 'apply', 'construct'];
  return Object.fromEntries(traps.map((trap) => [trap, thrower])) as ProxyHandler<object>;
}

function revoked(target: object): unknown {
  const { proxy, revoke } = Proxy.revocable(target, {});
  revoke();
  return proxy;
}

function selfReferencing(): unknown {
  const value: Record<string, unknown> = { mode: 'ask' };
  value.self = value;
  value.input = [value];
  return value;
}

function rejected(): Promise<never> {
  const promise = Promise.reject(new Error('hostile rejection'));
  // Handled here, so only a command that awaits it (none should) would see the rejection.
  promise.catch(() => undefined);
  return promise;
}

const plain = (label: string) => (value: unknown) => new Hostile(`${label} ${safeStringify(value)}`, () => value);

function safeStringify(value: unknown): string {
  try {
    return fc.stringify(value).slice(0, 200);
  } catch {
    return '?';
  }
}

/** Any one hostile value: plain data of every type, the special strings and numbers, the exotic objects. */
export const hostileLeaf: fc.Arbitrary<Hostile> = fc.oneof(
  fc
    .anything({ withBigInt: true, withDate: true, withMap: true, withSet: true, withTypedArray: true, withSparseArray: true, withNullPrototype: true, withBoxedValues: true, withObjectString: true, maxDepth: 4 })
    .map(plain('anything')),
  fc.string({ unit: 'binary', maxLength: 300 }).map(plain('string')),
  fc.constantFrom(...SPECIAL_STRINGS).map((s) => new Hostile(`special string ${safeStringify(s.slice(0, 40))} (${s.length} chars)`, () => s)),
  fc.constantFrom(...SPECIAL_NUMBERS).map(plain('number')),
  fc.constantFrom(...EXOTIC).map(([label, make]) => new Hostile(label, make)),
);

/**
 * A value that is valid but for one place: `base` with the value at one of its paths replaced by a
 * hostile one, or `base` itself wrapped so reading it throws, or handed over with a polluted prototype.
 */
export function nearlyValid(base: fc.Arbitrary<unknown>): fc.Arbitrary<Hostile> {
  return fc.oneof(
    fc.tuple(base, fc.nat(), hostileLeaf).map(([value, pick, leaf]) => replacedAt(value, pick, leaf)),
    fc.tuple(base, fc.constantFrom(...WRAPPERS)).map(([value, [label, wrap]]) => new Hostile(`${label} ${safeStringify(value)}`, () => wrap(structuredClone(value)))),
  );
}

const WRAPPERS: readonly [string, (value: unknown) => unknown][] = [
  ['inherited from the prototype:', (value) => (typeof value === 'object' && value !== null ? (Object.create(value) as unknown) : value)],
  ['behind a proxy whose get throws on the last key:', (value) => throwOnLastKey(value)],
  ['behind a revoked proxy:', (value) => (typeof value === 'object' && value !== null ? revoked(value) : value)],
  ['with an own __proto__ key:', (value) => withOwnProto(value)],
  ['in an array:', (value) => [value]],
  ['as JSON text:', (value) => JSON.stringify(value)],
  ['frozen:', (value) => (typeof value === 'object' && value !== null ? Object.freeze(value) : value)],
];

function throwOnLastKey(value: unknown): unknown {
  if (typeof value !== 'object' || value === null) return value;
  const last = Object.keys(value).at(-1);
  return new Proxy(value, { get: (target, key, receiver) => (key === last ? boom(`get ${String(key)}`)() : Reflect.get(target, key, receiver)) });
}

function withOwnProto(value: unknown): unknown {
  if (typeof value !== 'object' || value === null) return value;
  return Object.defineProperty(structuredClone(value), '__proto__', { value: { polluted: true, mode: 'auto' }, enumerable: true, configurable: true, writable: true });
}

/** Every path to a leaf of a JSON-like value, parents included. */
function pathsOf(value: unknown, prefix: (string | number)[] = []): (string | number)[][] {
  if (typeof value !== 'object' || value === null) return [prefix];
  const entries = Array.isArray(value) ? value.map((v, i) => [i, v] as const) : Object.entries(value);
  return [prefix, ...entries.flatMap(([key, v]) => pathsOf(v, [...prefix, key]))];
}

function replacedAt(value: unknown, pick: number, leaf: Hostile): Hostile {
  const paths = pathsOf(value);
  const path = paths[pick % paths.length]!;
  return new Hostile(`${safeStringify(value)} with ${path.join('.') || '(the whole value)'} = ${leaf.label}`, () => {
    if (path.length === 0) return leaf.make();
    const copy = structuredClone(value) as Record<string | number, unknown>;
    let parent = copy;
    for (const key of path.slice(0, -1)) parent = parent[key] as Record<string | number, unknown>;
    parent[path.at(-1)!] = leaf.make();
    return copy;
  });
}
