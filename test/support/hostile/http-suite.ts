import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { durableTargets } from '../databases.js';
import { runsFor, seedFor, type Size, type SuiteName } from './budget.js';
import { expectUnpolluted, expectUsable, hostileHost, prototypeNames, type HostileHost } from './hostile-host.js';
import { label, send, type HttpAnswer, type HttpRequest, type Operation } from './http-request.js';
import type { StorageMethod } from '../../../storage/faulty-storage.js';
import { conforming } from './json-schema.js';
import { checkProperty, type PropertyRun } from './property.js';
import { untypedAnswer } from './verdict.js';

/** One HTTP hostile-input suite: which part of the request it makes hostile, and what else it checks. */
export interface HttpSuite {
  name: SuiteName;
  /** The test file that runs it, for the replay command. */
  file: string;
  size: Size;
  /** The seed `npm test` replays. */
  seed: number;
  /** The host requires this bearer token. */
  token?: string;
  /** The routes it covers; all of `/openapi.json` by default. */
  operations?: (all: Operation[]) => Operation[];
  /** Runs once the host is up, before the first request. */
  prepare?: (h: HostileHost) => Promise<void>;
  request: (h: HostileHost, op: Operation) => fc.Arbitrary<HttpRequest>;
  /** Whether an event stream answering `request` owes its first event at once (else only its first block is read). */
  eventDue?: (h: HostileHost, request: HttpRequest) => boolean;
  /** Storage methods made to fail for the length of one request (or none); a 503 with a storage code is then a typed answer. */
  faults?: fc.Arbitrary<readonly StorageMethod[]>;
  /** A further check of each answer: the reason it is wrong, or null. */
  check?: (h: HostileHost, request: HttpRequest, answer: HttpAnswer) => string | null;
}

/** Milliseconds per request allowed for, generously: CI machines vary. */
const MS_PER_REQUEST = 60;

/**
 * Runs a suite on every dialect: one host per batch, real HTTP on loopback. Every answer must be
 * typed (see `untypedAnswer`), every route must have been reached, and afterwards the session
 * completes a normal turn through the API and no prototype has been polluted.
 */
export function describeHttpSuite(suite: HttpSuite): void {
  describe.each(durableTargets)(`hostile ${suite.name} on $name`, ({ name, skip, create }) => {
    const runs = runsFor(suite.name, suite.size, name);
    const before = prototypeNames();
    let h: HostileHost | undefined;
    beforeAll(async () => {
      if (skip) return;
      h = await hostileHost(create(), { ...(suite.token && { token: suite.token }) });
      await suite.prepare?.(h);
    });
    afterAll(async () => {
      await h?.host.close();
      await h?.db.drop();
    });

    it.skipIf(skip)(`${suite.name} on ${name}: every answer is typed, and the session still runs a turn`, { timeout: 60_000 + runs * MS_PER_REQUEST }, async () => {
      const operations = (suite.operations ?? ((all) => all))(h!.operations);
      const reached = await runBatch(suite, h!, operations, { suite: `${suite.name} on ${name}`, file: suite.file, runs, seed: seedFor(suite.size, suite.seed) });
      expect([...reached].sort()).toEqual(operations.map(label).sort());
      h!.host.storage.heal();
      await expectUsable(h!);
      expectUnpolluted(before);
    });
  });
}

/** The property: one request per generated input, with the storage fault it was drawn with; answers the routes reached. */
async function runBatch(suite: HttpSuite, h: HostileHost, operations: Operation[], run: PropertyRun): Promise<Set<string>> {
  const reached = new Set<string>();
  const statuses = new Map<number, number>();
  const faults = suite.faults ?? fc.constant([]);
  const arbitrary = fc.constantFrom(...operations).chain((op) => fc.record({ op: fc.constant(label(op)), request: suite.request(h, op), fault: faults }));
  await checkProperty(run, arbitrary, async ({ op, request, fault }) => {
    reached.add(op);
    h.host.storage.heal();
    for (const method of fault) h.host.storage.failAlways(method);
    const answer = await send(h.host.url, request, suite.eventDue?.(h, request) ?? false);
    statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1);
    const problem = untypedAnswer(answer, fault.length > 0) ?? suite.check?.(h, request, answer) ?? null;
    if (problem) throw new Error(`${request.method} ${request.path.slice(0, 300)} answered ${problem}: ${answer.text.slice(0, 500)}`);
  });
  console.log(`hostile ${run.suite}: answers by status ${JSON.stringify(Object.fromEntries([...statuses].sort(([a], [b]) => a - b)))}`);
  return reached;
}

/** The JSON content type, and the bearer token if the host wants one. */
export function jsonHeaders(h: HostileHost): [string, string][] {
  return [['content-type', 'application/json'], ...h.auth];
}

/** A well-formed JSON body for `op`, or none for a route that takes none (fetch sends no body with GET). */
export function wellFormedBody(h: HostileHost, op: Operation): fc.Arbitrary<string | null> {
  return op.body && op.method !== 'GET' ? conforming(op.body, h.context).map((v) => JSON.stringify(v)) : fc.constant(null);
}

/** `op` at `path` with `body` as JSON, and the token if the host wants one. */
export function jsonRequest(h: HostileHost, op: Operation, path: string, body: string | null): HttpRequest {
  return { method: op.method, path, headers: jsonHeaders(h), ...(body !== null && { body: { text: body } }) };
}
