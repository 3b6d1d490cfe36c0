import { createRoute, type OpenAPIHono } from '@hono/zod-openapi';
import { createUIMessageStreamResponse, type UIMessageChunk } from 'ai';
import type { Context } from 'hono';
import { z } from 'zod';
import { TurnchartError } from '../../protocol/errors.js';
import { parseApprovalId } from '../approval-id.js';
import { ApiError, viaStorage } from '../errors.js';
import { callerOf } from '../auth.js';
import { workspaceFor } from '../../tools/workspace/user-directory.js';
import { openSessionOf, sessionOf, storedSessionOf, unwrap, type HostContext } from '../host-context.js';
import { sessionIdSchema } from '../../protocol/commands.js';
import { untilOwnerAnswers } from '../sse-takeover.js';
import { isAdmin, type Caller } from '../../protocol/principal.js';
import type { SessionAccess } from '../session-access.js';
import { LocalSession } from '../local-session.js';
import { errors, TraceHeaders, UiApprovalAnswer, UiChatParams, UiChatQuery, UiChatRequest, UiTextPart } from '../schemas.js';
import { traceParentFromHeader } from '../../protocol/trace-context.js';
import { TurnRecords } from '../turn-records.js';
import { UiMessageTranslator } from '../ui-message-stream.js';
import { replayTurn, uiChunkStream, UpdateTap, type PreparedTurn } from '../ui-turn-stream.js';

const STREAM = 'the AI SDK 6 UI message stream (text/event-stream, `x-vercel-ai-ui-message-stream: v1`)';

const post = createRoute({
  method: 'post',
  path: '/api/chat',
  summary: 'The AI SDK UI endpoint: what `useChat` with `DefaultChatTransport` sends',
  description:
    'The chat `id` is the session id; an unknown one creates the session in the host\'s default permission mode. ' +
    'A last message from the user starts a turn, its message id the `clientRequestId` (sent again, it answers with the same turn, replayed). ' +
    'A last message from the assistant with tool parts in `approval-responded` answers the pending approval, and the response continues that message. ' +
    'A response ends with the turn, or at an approval request while the turn waits. Only the last message is read. ' +
    'The body\'s `agent` (or `?agent=`) picks the agent of a session this request creates; an unknown name is `400 UnknownAgent`.',
  request: { query: UiChatQuery, headers: TraceHeaders, body: { content: { 'application/json': { schema: UiChatRequest } }, required: true } },
  responses: { 200: { description: STREAM }, ...errors(400, 401, 403, 404, 409, 413, 415, 429, 503) },
});

const resume = createRoute({
  method: 'get',
  path: '/api/chat/{id}/stream',
  summary: 'Resume the running turn\'s UI message stream from its start (`useChat({ resume: true })`)',
  request: { params: UiChatParams },
  responses: { 200: { description: STREAM }, 204: { description: 'no turn of this chat is running' }, ...errors(400, 401, 409, 429, 503) },
});

type ChatRequest = z.infer<typeof UiChatRequest>;

type UiMessage = ChatRequest['messages'][number];

export function uiChatRoutes(app: OpenAPIHono, host: HostContext): void {
  const sessions = new ChatSessions(host);

  app.openapi(post, async (c) => {
    const body = c.req.valid('json');
    if (body.trigger === 'regenerate-message') {
      throw new ApiError('InvalidInput', 'regenerating a response is not supported: a turn, once stored, is never replaced; send a new message instead');
    }
    const agent = body.agent ?? c.req.valid('query').agent;
    host.agents.check(agent);
    const last = body.messages.at(-1)!;
    const caller = callerOf(c);
    const traceParent = traceParentFromHeader(c.req.valid('header').traceparent);
    if (last.role === 'user') return respond(host, await host.limits.streams.open(c.req.method, caller, async () => startTurn(c, host, caller, await sessions.get(body.id, caller, agent), last, traceParent)));
    if (last.role === 'assistant') return respond(host, await host.limits.streams.open(c.req.method, caller, async () => answerApprovals(c, host, await sessionOf(host, body.id, caller), last)));
    throw new ApiError('InvalidInput', 'the last message must be the user\'s new message or the assistant message whose approval was answered');
  });

  app.openapi(resume, async (c) => {
    const { id } = c.req.valid('param');
    const caller = callerOf(c);
    // The owner died mid-turn: held until its lease runs out and the turn goes on here or elsewhere (issue 26).
    const running = await untilOwnerAnswers(() => runningTurnOf(host, id, caller), c.req.raw.signal);
    if (!running) return c.body(null, 204);
    const { session, turnId } = running;
    const stream = await host.limits.streams.open(c.req.method, caller, async () => {
      // Should the turn end before the tap opens, the replay finds its outcome in the snapshot it reads after.
      const tap = await UpdateTap.open(session);
      return chunks(c, host, tap, await prepared(tap, () => replayTurn(session, host.storage, turnId, turnId)));
    });
    return respond(host, stream);
  });
}

/**
 * The chat's running turn and its session, or null when none runs. A session open here or on a
 * live host is asked. One open nowhere runs no turn — unless its host went away mid-turn: that turn
 * is still `running` in storage and goes on wherever the session opens next (issue 26), so the
 * session is opened here for it. Nothing is opened for a chat without such a turn, or another's.
 */
async function runningTurnOf(host: HostContext, id: string, caller: Caller): Promise<{ session: SessionAccess; turnId: string } | null> {
  let session = await openSessionOf(host, id, caller);
  if (!session) {
    if (!sessionIdSchema.safeParse(id).success) return null;
    try {
      await storedSessionOf(host, id, caller);
    } catch (error) {
      if (error instanceof ApiError && error.code === 'UnknownSession') return null;
      throw error;
    }
    const turns = await viaStorage(() => host.storage.listTurns(id));
    if (!turns.some((turn) => turn.status === 'running')) return null;
    session = await sessionOf(host, id, caller);
  }
  const view = (await session.snapshot()).runtime;
  return view.kind === 'running' ? { session, turnId: view.turnId } : null;
}

/**
 * The turn the user's message starts, or the one it started before (the same message id): replayed
 * from its start. A new turn counts against the caller's quotas of turns (issue 25).
 */
async function startTurn(c: Context, host: HostContext, caller: Caller, session: SessionAccess, message: UiMessage, traceParent: string | undefined): Promise<ReadableStream<UIMessageChunk>> {
  if (message.parts.some((part) => part.type === 'file')) throw new ApiError('InvalidInput', 'file parts are not supported; send text');
  const texts: string[] = [];
  for (const part of message.parts) {
    if (part.type !== 'text') continue;
    const text = UiTextPart.safeParse(part);
    if (!text.success) throw new ApiError('InvalidInput', z.prettifyError(text.error));
    texts.push(text.data.text);
  }
  const tap = await UpdateTap.open(session);
  return chunks(
    c,
    host,
    tap,
    await prepared(tap, async () => {
      const admitted = await host.limits.principals.admitTurn(caller, session.id, message.id);
      try {
        const input = [{ type: 'text' as const, text: texts.join('\n\n') }];
        // Issue 27: the caller's trace context (W3C `traceparent`) goes with the command, routed or not.
        const accepted = unwrap(await session.call('submitTurn', { clientRequestId: message.id, input, trigger: 'message', ...(traceParent && { traceParent }) }));
        return replayTurn(session, host.storage, accepted.turnId, accepted.turnId);
      } finally {
        admitted();
      }
    }),
  );
}

/**
 * The client answered approvals (`addToolApprovalResponse`): each resolves its pending permission,
 * and the response continues the same assistant message from there. The client holds everything
 * up to the approval already, so only what follows is sent.
 */
async function answerApprovals(c: Context, host: HostContext, session: SessionAccess, message: UiMessage): Promise<ReadableStream<UIMessageChunk>> {
  const answers = message.parts.filter((part) => (part as { state?: unknown }).state === 'approval-responded').map((part) => approvalAnswer(part));
  if (answers.length === 0) throw new ApiError('InvalidInput', 'the last message is the assistant\'s but answers no approval');
  const turnId = answers[0]!.turnId;
  if (answers.some((answer) => answer.turnId !== turnId)) throw new ApiError('InvalidInput', 'the approvals answered belong to different turns');
  const tap = await UpdateTap.open(session);
  return chunks(
    c,
    host,
    tap,
    await prepared(tap, async () => {
      const records = new TurnRecords(host.storage, session.id, turnId);
      await viaStorage(() => records.refresh());
      const translator = new UiMessageTranslator(turnId, records);
      translator.continueAfter(answers.map((answer) => answer.toolCallId));
      for (const answer of answers) {
        const decision = answer.approved ? 'allow_once' : 'deny';
        // The answer names who gave it (issue 25): the audit row records it.
        unwrap(await session.call('resolvePermission', { turnId, toolCallId: answer.toolCallId, decision, principal: callerOf(c).principal }));
      }
      return { turnId, translator, records, opening: translator.start(message.id), floor: -1 } satisfies PreparedTurn;
    }),
  );
}

function approvalAnswer(part: unknown): { turnId: string; toolCallId: string; approved: boolean } {
  const answer = UiApprovalAnswer.safeParse(part);
  if (!answer.success) throw new ApiError('InvalidInput', z.prettifyError(answer.error));
  const target = parseApprovalId(answer.data.approval.id);
  if (!target || target.toolCallId !== answer.data.toolCallId) throw new ApiError('InvalidInput', `approval '${answer.data.approval.id}' is not one this host asked for`);
  return { ...target, approved: answer.data.approval.approved };
}

/** Prepares the turn with the tap open; a failure before streaming closes it and answers as a JSON error. */
async function prepared(tap: UpdateTap, prepare: () => Promise<PreparedTurn>): Promise<PreparedTurn> {
  try {
    return await viaStorage(prepare);
  } catch (error) {
    tap.close();
    throw error;
  }
}

function chunks(c: Context, host: HostContext, tap: UpdateTap, turn: PreparedTurn): ReadableStream<UIMessageChunk> {
  // Node's response, so a client that falls behind can be cut off at once (the Node adapter passes it as env).
  const outgoing = (c.env as { outgoing?: { destroy(): void } } | undefined)?.outgoing;
  return uiChunkStream(tap, turn, {
    bufferBytes: host.sse.bufferBytes,
    ...(host.sse.lagged && { lagged: host.sse.lagged }),
    signal: c.req.raw.signal,
    ...(outgoing && { disconnect: () => outgoing.destroy() }),
  });
}

function respond(host: HostContext, stream: ReadableStream<UIMessageChunk>): Response {
  return createUIMessageStreamResponse({ stream, keepAliveMs: host.sse.heartbeatMs });
}

/**
 * The chat's session, created on first use under the chat's id in the host's default permission
 * mode, for the caller (issue 25: a chat is its creator's; another principal's id answers
 * `UnknownSession`, 404). Creations of one id by one principal here share one attempt; one racing
 * another principal's, or another host's, fails on the id (`SessionExists`), and the chat goes on
 * in the session that won — if the caller may see it.
 */
class ChatSessions {
  /** Keyed by principal and id: one principal's attempt never answers another's request. */
  private readonly creating = new Map<string, Promise<SessionAccess>>();

  constructor(private readonly host: HostContext) {}

  /** `agent` is the agent of the session if this call creates it; an existing chat keeps its own. */
  async get(id: string, caller: Caller, agent?: string): Promise<SessionAccess> {
    const key = JSON.stringify([caller.principal, id]);
    const pending = this.creating.get(key);
    if (pending) return pending;
    try {
      return await sessionOf(this.host, id, caller);
    } catch (error) {
      if (!((error instanceof TurnchartError || error instanceof ApiError) && error.code === 'UnknownSession')) throw error;
    }
    return this.create(key, id, caller, agent);
  }

  private create(key: string, id: string, caller: Caller, agent: string | undefined): Promise<SessionAccess> {
    let creation = this.creating.get(key);
    if (creation) return creation;
    const { runtime, defaultPermissionMode, workspaceDir, limits } = this.host;
    const created = workspaceFor(workspaceDir, caller.principal, isAdmin(caller)).then((dir) =>
      limits.sessions.create(caller, { id, permissionMode: defaultPermissionMode, workspaceDir: dir, ...(agent !== undefined && { agent }) }),
    );
    creation = created.then(
      (handle) => new LocalSession(handle, runtime),
      (error: unknown) => {
        // Another host, or another principal's request, created it meanwhile: the chat's session all the same, if it is the caller's.
        if (error instanceof TurnchartError && error.code === 'SessionExists') return sessionOf(this.host, id, caller);
        throw error;
      },
    );
    this.creating.set(key, creation);
    void creation.finally(() => this.creating.delete(key)).catch(() => undefined);
    return creation;
  }
}
