import { z } from '@hono/zod-openapi';
import { busyPolicySchema, idSchema, MAX_TEXT_CHARS, permissionModeSchema } from '../protocol/commands.js';
import { commandCatalog } from '../protocol/command-catalog.js';
import { turnStatusSchema } from '../protocol/outcome.js';

/**
 * The HTTP API's shapes, from the same zod schemas the runtime validates commands with; the
 * OpenAPI document at `/openapi.json` is generated from these.
 */

const ErrorSchema = z
  .object({ error: z.object({ code: z.string(), message: z.string() }).catchall(z.unknown()) })
  .openapi('Error');

export const SessionParams = z.object({ sessionId: idSchema });
export const TurnParams = SessionParams.extend({ turnId: idSchema });
export const PermissionParams = TurnParams.extend({ toolCallId: idSchema });

export const CreateSessionBody = z
  .object({
    agent: idSchema.optional(),
    permissionMode: permissionModeSchema.optional(),
    busyPolicy: busyPolicySchema.optional(),
    /** No approvals will be answered: a call that would ask is a rule denial. */
    nonInteractive: z.boolean().optional(),
  })
  .strict()
  .openapi('CreateSession');

const QueuedTurn = z.object({ turnId: z.string(), clientRequestId: z.string() });

export const SnapshotSchema = z
  .object({
    version: z.literal(8),
    sessionId: z.string(),
    lastUpdateSequence: z.number().int(),
    permissionMode: permissionModeSchema,
    busyPolicy: busyPolicySchema,
    queue: z.array(QueuedTurn),
    sandbox: z
      .discriminatedUnion('kind', [z.object({ kind: z.literal('none'), reason: z.string().nullable() }), z.object({ kind: z.literal('bwrap'), network: z.boolean() })])
      .openapi({ description: "what confines the session's commands: `bwrap` (bubblewrap, with or without network) or `none` (the host's permissions; `reason` says why, null when the agent has no run_command)" }),
    runtime: z.object({ kind: z.enum(['idle', 'running', 'terminal']) }).catchall(z.unknown()),
  })
  .openapi('SessionSnapshot');

const AgentEntry = z
  .object({
    name: z.string(),
    description: z.string().nullable(),
    model: z.string().openapi({ description: 'the description of the model its turns run on' }),
    tools: z.array(z.string()).openapi({ description: 'the tools its model is offered' }),
  })
  .openapi('Agent');

export const AgentList = z.object({ agents: z.array(AgentEntry) }).openapi('AgentList');

export const CreatedSession = z.object({ sessionId: z.string(), snapshot: SnapshotSchema }).openapi('CreatedSession');

const SessionSummary = z
  .object({
    sessionId: z.string(),
    agent: z.string(),
    principal: z.string().nullable().openapi({ description: 'who owns the session (issue 25); null for one stored before principals' }),
    permissionMode: permissionModeSchema,
    busyPolicy: busyPolicySchema,
    createdAtMs: z.number().int(),
    status: z.string().openapi({ description: '`idle`, the running turn\'s phase, or `running` when another host runs it' }),
    lastOutcome: z.string().nullable(),
  })
  .openapi('SessionSummary');

export const SessionList = z.object({ sessions: z.array(SessionSummary), nextCursor: z.string().nullable() }).openapi('SessionList');

export const PageQuery = z.object({
  limit: z.coerce.number().int().min(1).max(200).default(50),
  cursor: z.string().max(500).optional(),
});

// The bodies of the routes that run one command are its input in the catalog (`src/protocol/command-catalog.ts`), or a field holding it.
const { submitTurn, resolvePermission, setPermissionMode, switchAgent, deliverAgentMessage, rewindConversation } = commandCatalog;

/** A turn's input without its trigger (a request's turn is always a `message`), and with at least one part. */
export const StartTurnBody = submitTurn.input
  .pick({ clientRequestId: true, input: true })
  .extend({ input: submitTurn.input.shape.input.min(1) })
  .strict()
  .openapi('StartTurn');

export const AcceptedTurn = z.object({ turnId: z.string(), runId: z.string(), status: turnStatusSchema }).openapi('AcceptedTurn');

export const TurnState = z
  .object({ turnId: z.string(), status: turnStatusSchema, outcome: z.object({ status: z.string() }).catchall(z.unknown()).optional() })
  .openapi('TurnState');

export const WaitQuery = z.object({ wait: z.coerce.number().min(0).max(60).optional() });

/** The turn and the tool call are the route's path. */
export const DecisionBody = resolvePermission.input.pick({ decision: true }).strict().openapi('PermissionDecision');
export const ModeBody = z.object({ mode: setPermissionMode.input }).strict().openapi('PermissionMode');
/** As large as a request's text part may be; the mailbox refuses what is too many tokens. */
export const AgentMessageBody = deliverAgentMessage.input
  .extend({ text: deliverAgentMessage.input.shape.text.max(MAX_TEXT_CHARS) })
  .strict()
  .openapi('AgentMessage');
export const AgentBody = z.object({ agent: switchAgent.input }).strict().openapi('AgentSwitch');
export const AgentSwitched = z.object({ ok: z.literal(true), agent: z.string() }).openapi('AgentSwitched');
export const RewindBody = z.object({ compactionId: rewindConversation.input }).strict().openapi('Rewind');

export const Ok = z.object({ ok: z.literal(true) }).openapi('Ok');
export const Compacted = z.object({ ok: z.literal(true), compactionId: z.string() }).openapi('Compacted');

export const MessagesQuery = z.object({
  after: z.coerce.number().int().min(-1).max(Number.MAX_SAFE_INTEGER).optional(),
  limit: z.coerce.number().int().min(1).max(1_000).default(200),
});

export const MessagePage = z
  .object({
    messages: z.array(z.object({ id: z.string(), turnId: z.string(), sequence: z.number().int(), createdAtMs: z.number().int(), message: z.object({ role: z.string() }).catchall(z.unknown()) })),
    nextAfter: z.number().int().nullable(),
  })
  .openapi('MessagePage');

export const AuditQuery = z.object({
  limit: z.coerce.number().int().min(1).max(500).default(50),
  before: z.coerce.number().int().min(0).max(Number.MAX_SAFE_INTEGER).optional(),
});

const AuditEntrySchema = z
  .object({
    id: z.string().openapi({ description: 'the tool result message this row was written with' }),
    sessionId: z.string(),
    turnId: z.string(),
    sequence: z.number().int(),
    createdAtMs: z.number().int(),
    toolCallId: z.string(),
    toolName: z.string(),
    argumentsHash: z.string().openapi({ description: 'sha256 of the arguments the model sent, as canonical JSON' }),
    dispatchedArgumentsHash: z.string().nullable().openapi({ description: 'sha256 of the arguments a hook rewrote them into' }),
    verdict: z.enum(['allowed', 'denied', 'none']),
    decidedBy: z.enum(['mode', 'rule', 'hook', 'user', 'timeout']).nullable(),
    status: z.enum(['succeeded', 'failed', 'denied', 'cancelled', 'outcome_unknown']),
    errorCode: z.string().nullable(),
    permissionWaitMs: z.number().int().nullable(),
    executionMs: z.number().int().nullable(),
    principal: z
      .string()
      .nullable()
      .openapi({ description: "who the call answers to: the principal that answered its approval when the user decided, else the session's owner; null for a session without one" }),
    attempts: z
      .array(
        z.object({
          attempt: z.number().int(),
          status: z.enum(['succeeded', 'failed', 'denied', 'cancelled', 'outcome_unknown']),
          failure: z.enum(['timeout', 'transient']).nullable(),
          durationMs: z.number().int(),
        }),
      )
      .optional()
      .openapi({ description: "each run of a call its tool's retryPolicy ran more than once (issue 30); absent for a call that ran once or never" }),
  })
  .openapi('AuditEntry');

export const AuditLogSchema = z
  .object({ entries: z.array(AuditEntrySchema), nextBefore: z.number().int().nullable() })
  .openapi('AuditLog');

export const ContextWindow = z.object({ budget: z.object({}).catchall(z.unknown()) }).catchall(z.unknown()).openapi('ContextWindow');

export const EventsQuery = z.object({ after: z.coerce.number().int().min(0).max(Number.MAX_SAFE_INTEGER).optional() });

export const Health = z.object({ ok: z.boolean() }).catchall(z.unknown()).openapi('Health');

/** The error responses a route may give besides its own; every route may answer 421. */
export function errors(...statuses: (400 | 401 | 403 | 404 | 409 | 413 | 415 | 429 | 503)[]) {
  const described: Record<number, string> = {
    400: 'invalid input',
    401: 'missing or wrong bearer token',
    403: "ForbiddenOrigin: the request's Origin is neither this host's own nor the --cors-origin",
    404: 'unknown session or turn',
    409: 'refused in the current state (Busy, TurnNotActive, PermissionNotPending, SessionOwnedElsewhere, …)',
    413: 'body over 1 MiB',
    415: 'UnsupportedMediaType: a body that is not application/json, or any body on a route that takes none',
    421: "MisdirectedRequest: the Host header names no address or name of this host (DNS rebinding)",
    429: "QuotaExceeded: the caller's principal is at one of its quotas (`quota`: sessions, running_turns, turns_per_minute or streams; `limit`), with Retry-After",
    503: 'storage unavailable; or the host is at its limit of open sessions (HostAtCapacity) or streams (TooManyStreams), with Retry-After',
  };
  return Object.fromEntries([...statuses, 421].map((s) => [s, { description: described[s]!, content: { 'application/json': { schema: ErrorSchema } } }]));
}

/**
 * The body the AI SDK's `DefaultChatTransport` sends (`ai@6`): the chat id (the session id), the
 * conversation as the client holds it, and why it was sent. Only the last message is read; fields
 * a front end adds through the transport's `body` option are tolerated.
 */
const UiPart = z.object({ type: z.string().max(200) }).loose();
const UiMessage = z
  .object({ id: z.string().min(1).max(200), role: z.enum(['system', 'user', 'assistant']), parts: z.array(UiPart).max(10_000) })
  .loose();

export const UiChatRequest = z
  .object({
    id: idSchema,
    messages: z.array(UiMessage).min(1).max(100_000),
    trigger: z.enum(['submit-message', 'regenerate-message']).default('submit-message'),
    messageId: z.string().max(200).optional(),
    /** The agent of the chat's session when this request creates it (`GET /agents` lists them). */
    agent: idSchema.optional(),
  })
  .loose()
  .openapi('UiChatRequest');

export const UiChatParams = z.object({ id: idSchema });

/** `/api/chat?agent=NAME`: the agent of a chat whose session is created by this request (the body's `agent` wins). */
export const UiChatQuery = z.object({ agent: idSchema.optional() });

/**
 * Issue 27: the W3C trace context of the routes that start turns. Any value is taken: one that is not
 * a valid traceparent is ignored, as W3C has receivers do (`traceParentFromHeader`), never refused.
 */
export const TraceHeaders = z.object({
  traceparent: z.string().optional().openapi({
    description:
      "W3C Trace Context (version 00): the turn's span becomes a child of this span, stored with the turn so a resumed turn stays in the trace. " +
      'An invalid value is ignored; without one the turn gets a trace of its own.',
    example: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
  }),
});

/** A text part of the user message that starts a turn. */
export const UiTextPart = z.object({ type: z.literal('text'), text: z.string().max(MAX_TEXT_CHARS) }).loose();

/** A tool part the client answered with `addToolApprovalResponse`. */
export const UiApprovalAnswer = z
  .object({
    toolCallId: idSchema,
    state: z.literal('approval-responded'),
    approval: z.object({ id: z.string().min(1).max(2_000), approved: z.boolean(), reason: z.string().max(10_000).optional() }).loose(),
  })
  .loose();
