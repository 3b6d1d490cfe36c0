import fc from 'fast-check';
import type { HostileHost } from '../hostile-host.js';
import type { HttpAnswer, HttpRequest, Operation } from '../http-request.js';
import { encodedJunk, pathSegment } from '../http-values.js';
import { describeHttpSuite } from '../http-suite.js';
import type { Size } from '../budget.js';

/**
 * The event stream with hostile resume points: `Last-Event-ID` and `?after` well-formed, from the
 * future, negative, padded, huge, repeated or junk, on live and junk session ids. A stream that
 * opens must start with its `retry:` field and then owe exactly the first event the README
 * promises — `snapshot` with no resume point, `snapshot_required` for a point this host never
 * issued, the next update for one it did — which is read before the connection is closed. The
 * session runs no turn meanwhile, so its last sequence stays put.
 */
export function describeHttpEvents(size: Size, file: string): void {
  describeHttpSuite({
    name: 'http events',
    file,
    size,
    seed: 9_005,
    prepare: rememberLastSequence,
    operations: (all) => all.filter((op) => op.template === '/sessions/{sessionId}/events'),
    request: (h, op) => eventRequest(h, op),
    eventDue: (h, request) => resumePoint(request) !== lastSequence(h),
    check: firstEvent,
  });
}

/** The host's session's last sequence, read once the suite's setup turns are done. */
const lastSequences = new WeakMap<HostileHost, number>();
function lastSequence(h: HostileHost): number {
  return lastSequences.get(h) ?? NaN;
}

/** Reads the session's last sequence before the first request (the suite's hosts run no turns during the batch). */
async function rememberLastSequence(h: HostileHost): Promise<void> {
  const snapshot = await h.host.call('GET', `/sessions/${h.sessionId}`);
  lastSequences.set(h, snapshot.body.lastUpdateSequence as number);
}

const resumeValue = fc.oneof(fc.nat(40).map(String), fc.constantFrom('0', '1', '-1', ' 3 ', '03', '1e2', '1.5', '999999999999999', '9999999999999999', '9007199254740993', 'NaN', '', 'x', '%00', '0x1'), encodedJunk);

function eventRequest(h: HostileHost, op: Operation): fc.Arbitrary<HttpRequest> {
  return fc
    .record({
      session: pathSegment(h.sessionId, h.known, 2),
      after: fc.array(resumeValue, { maxLength: 2 }),
      lastEventId: fc.array(fc.oneof(fc.nat(40).map(String), fc.constantFrom('', ' 7', '-3', '12abc', '1e3', '9999999999999999', 'x'.repeat(300))), { maxLength: 2 }),
    })
    .map(({ session, after, lastEventId }) => ({
      method: 'GET',
      path: op.template.replace('{sessionId}', session) + (after.length ? `?${after.map((a) => `after=${a}`).join('&')}` : ''),
      headers: [['accept', 'text/event-stream'], ...lastEventId.map((v): [string, string] => ['last-event-id', v]), ...h.auth],
    }));
}

/**
 * Where the host resumes, as the README has it: `Last-Event-ID` (a sequence number) wins over
 * `?after`; anything else counts as no resume point. Null also for a request refused before that.
 */
function resumePoint(request: HttpRequest): number | null {
  const ids = request.headers.filter(([name]) => name === 'last-event-id').map(([, v]) => v.trim());
  const header = ids.join(', ').trim();
  if (/^\d{1,15}$/.test(header)) return Number(header);
  const after = [...new URL(request.path, 'http://x').searchParams.getAll('after')];
  return after.length === 1 ? Number(after[0]) : null;
}

function firstEvent(h: HostileHost, request: HttpRequest, answer: HttpAnswer): string | null {
  if (answer.status !== 200) return null;
  const resume = resumePoint(request);
  const last = lastSequence(h);
  const expected: (string | null)[] = resume === null ? ['snapshot'] : resume > last ? ['snapshot_required'] : resume < last ? ['message', 'snapshot_required'] : [null];
  return expected.includes(answer.firstEvent ?? null) ? null : `first event ${answer.firstEvent ?? 'none'} for resume point ${resume} (last sequence ${last}), expected ${expected.join(' or ')}`;
}
