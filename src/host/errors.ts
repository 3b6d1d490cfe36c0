import type { Context } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { FencedWriteError } from '../../storage/session-storage.js';
import { TurnchartError } from '../protocol/errors.js';
import { messageOf } from '../protocol/error-message.js';
import type { Warn } from '../protocol/log-fields.js';

/** What every error response carries: `{ error: { code, message, … } }`, never a stack trace. */
interface ApiErrorBody {
  error: { code: string; message: string } & Record<string, unknown>;
}

/** An error a route answers with: the code picks the status. */
export class ApiError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

/** Every command error code the runtime answers with, and the status it means over HTTP. */
const STATUS: Record<string, ContentfulStatusCode> = {
  InvalidInput: 400,
  EmptyInput: 400,
  UnknownSkill: 400,
  SkillTooLarge: 400,
  MessageTooLarge: 400,
  UnknownAgent: 400,
  AgentSwitchNotAllowed: 409,
  InvalidCursor: 400,
  Unauthorized: 401,
  ForbiddenOrigin: 403,
  /** Issue 27: a route for admins only (`GET /metrics`) asked by another caller. */
  Forbidden: 403,
  UnknownSession: 404,
  UnknownTurn: 404,
  /** Issue 30: no such run, or one of another principal's sessions. */
  UnknownRun: 404,
  UnknownCompaction: 404,
  UnknownTask: 404,
  NotFound: 404,
  Busy: 409,
  TurnNotActive: 409,
  PermissionNotPending: 409,
  SessionOwnedElsewhere: 409,
  SessionActive: 409,
  SessionExists: 409,
  TaskExists: 409,
  ReloadRequired: 409,
  NothingToCompact: 409,
  CompactionFailed: 409,
  InvalidTransition: 409,
  PayloadTooLarge: 413,
  UnsupportedMediaType: 415,
  MisdirectedRequest: 421,
  /** Issue 25: one of the caller's per-principal quotas (`quota`: sessions, running_turns, turns_per_minute, streams), with Retry-After. */
  QuotaExceeded: 429,
  InternalError: 500,
  PersistenceError: 503,
  StorageUnavailable: 503,
  RuntimeStopped: 503,
  SessionClosed: 503,
  InspectorNotBuilt: 503,
  OwnerUnavailable: 503,
  TransportUnavailable: 503,
  HostAtCapacity: 503,
  TooManyStreams: 503,
  OwnerTimeout: 504,
};

function statusOf(code: string): ContentfulStatusCode {
  return Object.hasOwn(STATUS, code) ? STATUS[code]! : 409;
}

/** A command's `{ ok: false, error }` as a response. */
export function commandError(c: Context, error: { code: string } & Record<string, unknown>): Response {
  const { code, message, ...details } = error;
  const text = typeof message === 'string' ? message : defaultMessage(code);
  if (typeof details.retryAfterMs === 'number') c.header('Retry-After', String(Math.max(1, Math.ceil(details.retryAfterMs / 1000))));
  return c.json({ error: { ...details, code, message: text } } satisfies ApiErrorBody, statusOf(code));
}

/** Anything a route threw, as a typed error: storage failures are 503, defects 500 without detail (reported, with the session the path names). */
export function errorResponse(c: Context, error: unknown, report: Warn): Response {
  const sessionId = SESSION_PATH.exec(c.req.path)?.[1];
  return commandError(c, typedError(error, (detail) => report(`request ${c.req.method} ${c.req.path} failed: ${detail}`, sessionId === undefined ? {} : { sessionId })));
}

/** The routes under a session: `/sessions/:id/…`, and a chat's `/api/chat/:id/…` (its id is the session's). */
const SESSION_PATH = /^\/(?:sessions|api\/chat)\/([^/]+)/;

/** What an error thrown while answering a request says to the client; a defect is reported and told as `InternalError`. */
export function typedError(error: unknown, report: (detail: string) => void): { code: string; message: string } & Record<string, unknown> {
  if (error instanceof ApiError) return { ...error.details, code: error.code, message: error.message };
  if (error instanceof TurnchartError) return { code: error.code, message: error.message };
  if (error instanceof FencedWriteError) return { code: error.code, message: error.message };
  if (error instanceof StorageUnavailable) return { code: 'StorageUnavailable', message: error.message };
  report(error instanceof Error ? (error.stack ?? error.message) : String(error));
  return { code: 'InternalError', message: 'the host could not answer this request' };
}

/** A storage call that failed: the database is away or refused (503). */
class StorageUnavailable extends Error {
  constructor(cause: unknown) {
    super(`storage failure: ${messageOf(cause)}`);
    this.name = 'StorageUnavailable';
  }
}

/**
 * Runs a call that reads or writes storage: a typed runtime error passes through as it is, and
 * anything else it throws is the database failing.
 */
export async function viaStorage<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    if (error instanceof TurnchartError || error instanceof FencedWriteError || error instanceof ApiError) throw error;
    throw new StorageUnavailable(error);
  }
}

/** What a code means, for errors the runtime answers without a message of their own. */
const MESSAGES: Record<string, string> = {
  Busy: 'another turn of this session is running',
  EmptyInput: 'the input has no text',
  TurnNotActive: 'that turn is not the running one',
  PermissionNotPending: 'no approval is pending for that tool call',
  SessionActive: 'a turn is running; try again when the session is idle',
  ReloadRequired: 'the session must be reloaded before it takes new turns',
  SessionClosed: 'the session closed while the request ran; try again',
  RuntimeStopped: 'the host is shutting down',
  OwnerUnavailable: "the host that holds this session cannot be reached; try again once its lease has run out",
  OwnerTimeout: 'the host that holds this session did not answer in time; the command may have taken effect',
};

export function defaultMessage(code: string): string {
  return Object.hasOwn(MESSAGES, code) ? MESSAGES[code]! : code.replace(/([a-z])([A-Z])/g, '$1 $2').toLowerCase();
}
