import fc from 'fast-check';
import { TurnchartError, type Runtime } from '../../../src/index.js';
import type { SessionHandle } from '../../../src/runtime/session-handle.js';
import { SnapshotSchema } from '../../../src/host/schemas.js';

/** The live ids a command's well-formed arguments are drawn from. */
export interface Ids {
  sessionId: string;
  turnId: string;
  compactionId: string;
  workspaceDir: string;
}

/** Where a command is sent: the runtime, or the session's current handle. */
export interface Target {
  runtime: Runtime;
  session: SessionHandle;
}

/** How a call ended: with a value, or by throwing (or rejecting with) something. */
export type Settled = { value: unknown } | { thrown: unknown };

export interface PublicCommand {
  name: string;
  /** Arguments it takes, well-formed; `nearlyValid` corrupts them. */
  valid: (ids: Ids) => fc.Arbitrary<unknown>;
  call: (target: Target, value: unknown) => unknown;
  /** Why the way the call ended is not a typed answer, or null. */
  untyped: (settled: Settled) => string | null;
}

const text = fc.string({ minLength: 1, maxLength: 20 });

/** `{ ok: true, … }` or `{ ok: false, error: { code } }`, never a throw. */
function okResult(settled: Settled): string | null {
  if ('thrown' in settled) return `threw ${printed(settled.thrown)}`;
  const r = settled.value as { ok?: unknown; error?: { code?: unknown } } | null;
  if (r?.ok === true) return null;
  return r?.ok === false && typeof r.error?.code === 'string' && r.error.code !== '' ? null : `answered ${printed(settled.value)}`;
}

/** A value that passes `accept`, or a `TurnchartError` with a code. */
function valueOrTurnchartError(accept: (value: unknown) => boolean) {
  return (settled: Settled): string | null => {
    if ('thrown' in settled) return settled.thrown instanceof TurnchartError && settled.thrown.code !== '' ? null : `threw ${printed(settled.thrown)}`;
    return accept(settled.value) ? null : `answered ${printed(settled.value)}`;
  };
}

function answered(accept: (value: unknown) => boolean) {
  return (settled: Settled): string | null => {
    if ('thrown' in settled) return `threw ${printed(settled.thrown)}`;
    return accept(settled.value) ? null : `answered ${printed(settled.value)}`;
  };
}

function printed(value: unknown): string {
  if (value instanceof Error) return `${value.constructor.name}: ${value.message}`;
  try {
    return fc.stringify(value).slice(0, 300);
  } catch {
    return '(unprintable)';
  }
}

const isHandle = (value: unknown) => typeof (value as SessionHandle | null)?.snapshot === 'function';
const turnInput = () => fc.record({ clientRequestId: fc.oneof(text, fc.constant('setup-1')), input: fc.array(fc.record({ type: fc.constant('text'), text }), { minLength: 1, maxLength: 2 }) });

/** Every public command of `SessionHandle` and `Runtime`, as the issue lists them. */
export const PUBLIC_COMMANDS: readonly PublicCommand[] = [
  { name: 'startTurn', valid: turnInput, call: (t, v) => t.session.startTurn(v), untyped: okResult },
  { name: 'submitTurn', valid: turnInput, call: (t, v) => t.session.submitTurn(v), untyped: okResult },
  { name: 'turnStatus', valid: (ids) => fc.oneof(fc.constant(ids.turnId), text), call: (t, v) => t.session.turnStatus(v as string), untyped: okResult },
  { name: 'waitForTurn', valid: (ids) => fc.oneof(fc.constant(ids.turnId), text), call: (t, v) => t.session.waitForTurn(v as string), untyped: answered((v) => typeof (v as { status?: unknown }).status === 'string') },
  { name: 'cancelTurn', valid: (ids) => fc.oneof(fc.constant(ids.turnId), text), call: (t, v) => t.session.cancelTurn(v), untyped: okResult },
  { name: 'resolvePermission', valid: (ids) => fc.record({ turnId: fc.constant(ids.turnId), toolCallId: text, decision: fc.constantFrom('allow_once', 'deny') }), call: (t, v) => t.session.resolvePermission(v), untyped: okResult },
  { name: 'setPermissionMode', valid: () => fc.constantFrom('ask', 'auto', 'read_only'), call: (t, v) => t.session.setPermissionMode(v), untyped: okResult },
  { name: 'deliverAgentMessage', valid: () => fc.record({ from: text, text }), call: (t, v) => t.session.deliverAgentMessage(v), untyped: okResult },
  { name: 'compactConversation', valid: () => fc.constant(undefined), call: (t, v) => (t.session.compactConversation as (v: unknown) => unknown)(v), untyped: okResult },
  { name: 'rewindConversation', valid: (ids) => fc.oneof(fc.constant(ids.compactionId), text), call: (t, v) => t.session.rewindConversation(v), untyped: okResult },
  { name: 'reload', valid: () => fc.constant(undefined), call: (t, v) => (t.session.reload as (v: unknown) => unknown)(v), untyped: okResult },
  { name: 'replayUpdates', valid: () => fc.nat(50), call: (t, v) => t.session.replayUpdates(v), untyped: okResult },
  { name: 'acceptedTurn', valid: () => fc.oneof(fc.constant('setup-1'), text), call: (t, v) => t.session.acceptedTurn(v as string), untyped: okResult },
  { name: 'snapshot', valid: () => fc.constant(undefined), call: (t, v) => (t.session.snapshot as (v: unknown) => unknown)(v), untyped: answered((v) => SnapshotSchema.safeParse(v).success) },
  { name: 'close', valid: () => fc.constant(undefined), call: (t, v) => (t.session.close as (v: unknown) => unknown)(v), untyped: answered((v) => v === undefined) },
  {
    name: 'createSession',
    valid: (ids) => fc.record({ agent: fc.constant('default'), permissionMode: fc.constantFrom('ask', 'auto', 'read_only'), busyPolicy: fc.constantFrom('reject', 'enqueue', 'interrupt'), workspaceDir: fc.constant(ids.workspaceDir) }, { requiredKeys: [] }),
    call: (t, v) => t.runtime.createSession(v as never),
    untyped: valueOrTurnchartError(isHandle),
  },
  { name: 'openSession', valid: (ids) => fc.oneof(fc.constant(ids.sessionId), text), call: (t, v) => t.runtime.openSession(v as string), untyped: valueOrTurnchartError(isHandle) },
  {
    name: 'inspectContextWindow',
    valid: (ids) => fc.oneof(fc.constant(ids.sessionId), text),
    call: (t, v) => t.runtime.inspectContextWindow(v as string),
    untyped: valueOrTurnchartError((v) => typeof (v as { budget?: unknown }).budget === 'object'),
  },
  {
    name: 'auditLog',
    valid: (ids) => fc.oneof(fc.constant(ids.sessionId), text),
    call: (t, v) => t.runtime.auditLog(v as string),
    untyped: valueOrTurnchartError((v) => Array.isArray((v as { entries?: unknown }).entries)),
  },
  {
    name: 'auditLog page',
    valid: () => fc.record({ limit: fc.integer({ min: 1, max: 500 }), before: fc.nat() }, { requiredKeys: [] }),
    call: (t, v) => t.runtime.auditLog(t.session.id, v as never),
    untyped: valueOrTurnchartError((v) => Array.isArray((v as { entries?: unknown }).entries)),
  },
];

/** Calls and settles: a synchronous throw counts as a throw, a returned promise is awaited. */
export async function settle(call: () => unknown): Promise<Settled> {
  try {
    return { value: await call() };
  } catch (thrown) {
    return { thrown };
  }
}
