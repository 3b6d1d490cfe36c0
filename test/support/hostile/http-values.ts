import fc from 'fast-check';
import { conforming, type SchemaContext } from './json-schema.js';
import type { HttpRequest, Operation } from './http-request.js';

/**
 * Generators for the hostile parts of an HTTP request — path segments, query strings, bodies,
 * headers — each next to its well-formed counterpart, so a request can be hostile in one part and
 * valid elsewhere and reach past the validation of the others.
 */

const encoder = new TextEncoder();
export const MAX_BODY = 1024 * 1024;

/** Percent-encodes every UTF-16 unit's bytes, lone surrogates too (as the invalid UTF-8 they would be). */
export function percentEncode(text: string): string {
  let out = '';
  for (const char of text) {
    const unit = char.codePointAt(0)!;
    const bytes = unit >= 0xd800 && unit <= 0xdfff ? [0xe0 | (unit >> 12), 0x80 | ((unit >> 6) & 0x3f), 0x80 | (unit & 0x3f)] : [...encoder.encode(char)];
    out += /^[A-Za-z0-9_.~-]$/.test(char) ? char : bytes.map((b) => `%${b.toString(16).toUpperCase().padStart(2, '0')}`).join('');
  }
  return out;
}

/** Path segments and query values as they go on the wire, already encoded (or broken). */
const RAW_SEGMENTS = [
  '%00',
  'a%00b',
  '%2e%2e',
  '%2E%2E%2F%2E%2E%2Fetc%2Fpasswd',
  '..%2f..%2f',
  '%2F',
  '%',
  '%zz',
  '%E0%A4%A',
  '%ED%A0%80',
  '%C0%AE%C0%AE',
  '%FF%FE',
  '__proto__',
  'constructor',
  'prototype',
  'hasOwnProperty',
  '%5F%5Fproto%5F%5F',
  'x'.repeat(200),
  'x'.repeat(201),
  'x'.repeat(4_000),
  '%F0%9F%8E%89'.repeat(50),
  'ses_',
  'null',
  'undefined',
  'NaN',
  '-0',
  '1e308',
  'Infinity',
  ';x=1',
  "'%20OR%201=1--",
  '%0d%0aX-Injected:%201',
  '%22%3E%3Cscript%3E',
];

export const encodedJunk: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(...RAW_SEGMENTS),
  fc.string({ unit: 'binary', minLength: 1, maxLength: 60 }).map(percentEncode),
  fc.string({ unit: 'grapheme', minLength: 1, maxLength: 60 }).map(encodeURIComponent),
);

/** A path segment: the live id for its place, another live id (right id, wrong place), or junk. */
export function pathSegment(right: string, known: readonly string[], junkWeight: number): fc.Arbitrary<string> {
  return fc.oneof(
    { weight: 3, arbitrary: fc.constant(encodeURIComponent(right)) },
    { weight: 1, arbitrary: fc.constantFrom(right, ...known).map(encodeURIComponent) },
    { weight: junkWeight, arbitrary: encodedJunk },
  );
}

/** The path of `op` with each parameter drawn from `segment(name)`. */
export function pathOf(op: Operation, segment: (param: string) => fc.Arbitrary<string>): fc.Arbitrary<string> {
  const values = Object.fromEntries(op.pathParams.map((name) => [name, segment(name)]));
  return fc.record(values).map((chosen) => op.template.replace(/\{(\w+)\}/g, (_, name: string) => chosen[name]!));
}

/** The path of `op` with each parameter the live id it names. */
export function livePath(op: Operation, ids: Record<string, string>): fc.Arbitrary<string> {
  return pathOf(op, (name) => fc.constant(encodeURIComponent(ids[name] ?? name)));
}

const QUERY_JUNK = ['', '-1', '0', '-0', '1.5', '1e3', '1e308', 'NaN', 'Infinity', '0x10', '+5', ' 5', '5 ', '9007199254740993', '99999999999999999999', '%00', 'true', '[]', '{}', 'null', 'x'.repeat(600), '%ED%A0%80', '%'];

/** A query string for `op`: each declared parameter absent, well-formed, or junk; sometimes repeated, sometimes undeclared ones too. */
export function queryOf(op: Operation, context: SchemaContext, junkWeight = 1): fc.Arbitrary<string> {
  const value = (schema: Operation['query'][number]['schema']) =>
    fc.oneof(
      { weight: 2, arbitrary: conforming(schema, context).map((v) => encodeURIComponent(String(v))) },
      { weight: junkWeight, arbitrary: fc.oneof(fc.constantFrom(...QUERY_JUNK), encodedJunk) },
    );
  const declared = op.query.map(({ name, schema }) => fc.option(fc.array(value(schema), { minLength: 1, maxLength: 2 }).map((vs) => vs.map((v) => `${name}=${v}`)), { nil: [] }));
  const undeclared = fc.array(fc.tuple(encodedJunk, fc.option(encodedJunk)).map(([k, v]) => (v === null ? k : `${k}=${v}`)), { maxLength: junkWeight > 0 ? 2 : 0 });
  return fc.tuple(fc.tuple(...declared), undeclared).map(([pairs, extra]) => {
    const all = [...pairs.flat(), ...extra];
    return all.length === 0 ? '' : `?${all.join('&')}`;
  });
}

const PLACEHOLDER = '\u0001HOSTILE\u0001';

/** Raw JSON tokens that replace one value of an otherwise valid body. */
const JSON_TOKENS = [
  'null',
  'true',
  '0',
  '-0',
  '1e400',
  '-1e400',
  '123456789012345678901234567890',
  '1.7976931348623157e308',
  '[]',
  '{}',
  '""',
  '" "',
  '"\\u0000"',
  '"a\\u0000b"',
  '"\\ud800"',
  '"x\\udc00"',
  '"__proto__"',
  '"constructor"',
  '{"__proto__":{"polluted":true}}',
  '{"constructor":{"prototype":{"polluted":true}}}',
  '[{"type":"text","text":"x","__proto__":{"type":"skill"}}]',
  `"${'x'.repeat(201)}"`,
  `"${'y'.repeat(300_000)}"`,
  `${'['.repeat(5_000)}${']'.repeat(5_000)}`,
  `${'{"a":'.repeat(5_000)}1${'}'.repeat(5_000)}`,
];

/** A JSON value with one place replaced by a raw token. */
function corrupted(value: unknown, pick: number, token: string): string {
  const paths = pathsOf(value);
  const path = paths[pick % paths.length]!;
  if (path.length === 0) return token;
  const copy = structuredClone(value) as Record<string | number, unknown>;
  let parent = copy;
  for (const key of path.slice(0, -1)) parent = parent[key] as Record<string | number, unknown>;
  parent[path.at(-1)!] = PLACEHOLDER;
  return JSON.stringify(copy).replace(JSON.stringify(PLACEHOLDER), token);
}

function pathsOf(value: unknown, prefix: (string | number)[] = []): (string | number)[][] {
  if (typeof value !== 'object' || value === null) return [prefix];
  const entries = Array.isArray(value) ? value.map((v, i) => [i, v] as const) : Object.entries(value);
  return [prefix, ...entries.flatMap(([key, v]) => pathsOf(v, [...prefix, key]))];
}

/** Text that is not the JSON a route wants, or not JSON at all. */
const GARBAGE_TEXT = [
  '',
  ' ',
  '{',
  '}',
  '{"a":',
  'null',
  '[]',
  '"text"',
  '42',
  'true',
  'NaN',
  'undefined',
  '{}garbage',
  '{} {}',
  '\uFEFF{}',
  '{/* comment */}',
  "{'mode':'ask'}",
  '{"mode":"ask",}',
  '{"mode":"ask","mode":"auto"}',
  '{"decision":"deny","decision":"allow_once"}',
  '{"__proto__":{"mode":"ask","decision":"deny","polluted":true}}',
  '{"constructor":{"prototype":{"polluted":true}}}',
  '\u0000',
  '{"\u0000":1}',
];

/** Nesting as deep as 1 MiB allows, and unfinished. */
const DEEP_TEXT = [
  `${'['.repeat(100_000)}${']'.repeat(100_000)}`,
  `${'{"a":'.repeat(50_000)}1${'}'.repeat(50_000)}`,
  `{"mode":${'['.repeat(200_000)}${']'.repeat(200_000)}}`,
  `{"clientRequestId":"deep","input":[${'{"type":'.repeat(100_000)}"text"${'}'.repeat(100_000)}]}`,
  '['.repeat(300_000),
];

/** Bodies near the 1 MiB limit and past it. */
const SIZED = [
  () => `{"clientRequestId":"big","input":[{"type":"text","text":"${'x'.repeat(MAX_BODY - 60)}"}]}`,
  () => `{"text":"${'x'.repeat(MAX_BODY)}","from":"w"}`,
  () => `${'['.repeat(MAX_BODY / 2 - 1)}${']'.repeat(MAX_BODY / 2 - 1)}`,
];

type Body = NonNullable<HttpRequest['body']>;

/** A body for `op`: valid, valid but for one value, garbage, raw bytes or streamed; rarely deep or past 1 MiB, which cost time. */
export function bodyOf(op: Operation, context: SchemaContext): fc.Arbitrary<Body | undefined> {
  const valid = op.body ? conforming(op.body, context) : fc.jsonValue({ maxDepth: 2 });
  const cheap = fc.oneof(
    { weight: 1, arbitrary: fc.constant(undefined) },
    { weight: 3, arbitrary: valid.map((v) => ({ text: JSON.stringify(v) })) },
    { weight: 6, arbitrary: fc.tuple(valid, fc.nat(), fc.constantFrom(...JSON_TOKENS)).map(([v, pick, token]) => ({ text: corrupted(v, pick, token) })) },
    { weight: 3, arbitrary: fc.constantFrom(...GARBAGE_TEXT).map((text) => ({ text })) },
    { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 4 }).map((v) => ({ text: JSON.stringify(v) })) },
    { weight: 1, arbitrary: fc.uint8Array({ maxLength: 300 }).map((bytes) => ({ bytes, streamed: false })) },
    { weight: 1, arbitrary: fc.tuple(valid, fc.boolean()).map(([v, streamed]) => ({ bytes: encoder.encode(JSON.stringify(v)), streamed })) },
  );
  const costly = fc.oneof(
    fc.constantFrom(...DEEP_TEXT).map((text) => ({ text })),
    fc.tuple(fc.constantFrom(...SIZED), fc.boolean()).map(([make, streamed]) => ({ bytes: encoder.encode(make()), streamed })),
  );
  return fc.oneof({ weight: 99, arbitrary: cheap }, { weight: 1, arbitrary: costly });
}

/** Content types a client might send, sensible and not. */
export const CONTENT_TYPES = [
  'application/json',
  'application/json',
  'application/json; charset=utf-8',
  'APPLICATION/JSON',
  'application/json; charset=utf-16',
  'application/json;;;',
  'application/json; x',
  'application/merge-patch+json',
  'application/jsonx',
  'application/json, text/plain',
  'text/plain',
  'text/plain;charset=UTF-8',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x',
  'multipart/form-data',
  'application/octet-stream',
  '*/*',
  '',
  ' ',
  'é/ü',
  'x'.repeat(5_000),
];
