import { resolve } from 'node:path';
import { sqliteStorage } from '../../storage/sqlite.js';
import { AgentDirectory } from '../host/agent-directory.js';
import { defaultMessage } from '../host/errors.js';
import type { LoadedConfig } from './config-file.js';
import { resolveConfig } from './config-resolve.js';
import { runtimeOptionsOf } from './serve.js';
import { modelFromSpec } from '../model/model-spec.js';
import { createRuntime, type Runtime } from '../runtime/runtime.js';
import type { SessionHandle } from '../runtime/session-handle.js';
import { sqliteStatePaths, workspaceTools } from '../tools/workspace/index.js';
import { McpServers } from '../tools/mcp/index.js';
import { reapLeftoverCommands } from '../tools/sandbox/command-ledger.js';
import type { SandboxChoice } from '../tools/sandbox/command-sandbox.js';
import { asChatError, ChatError, type ChatClient, type ChatCommandName, type Feed, type SessionSummary } from './chat-client.js';
import type { CommandInput, CommandOk, SessionCommands } from '../protocol/command-catalog.js';
import { ToolCallIndex } from './chat-tool-calls.js';

export interface EmbeddedOptions {
  /** SQLite file; its directory is created. */
  db: string;
  /** The directory the sessions work in (their tools are confined to it). */
  workspace: string;
  /** `scripted:FILE`, or undefined for the demo model (as `turnchart serve --model`). */
  model?: string;
  /** Variables of this process's environment run_command's commands get besides the baseline (`workspaceTools({ commandEnv })`). */
  commandEnv?: readonly string[];
  /** run_command's sandbox (`workspaceTools({ sandbox })`): `auto` by default. */
  sandbox?: SandboxChoice;
  /** The configuration file: its agents, models, tools, rules and MCP servers. */
  config?: LoadedConfig | null;
  /** `model` came from `--model` or `TURNCHART_MODEL`, and overrides the file's default model. */
  modelFromFlags?: boolean;
  /** Notes from the runtime (a skill folder it skipped, a subscriber that threw, …). */
  warn?: (message: string) => void;
}

/**
 * The chat client on a runtime in this process: the same runtime, workspace tools and SQLite
 * storage `turnchart serve` runs, driven through the session handle. The sessions are held under a
 * lease, so a host serving the same file at the same time answers `SessionOwnedElsewhere` for them
 * (and this client does for the host's).
 */
export async function embeddedChatClient(options: EmbeddedOptions): Promise<ChatClient & { runtime: Runtime; modelDescription: string }> {
  const configured = options.config ? await resolveConfig(options.config, { modelOverride: options.modelFromFlags ? options.model : undefined, provider: {} }) : null;
  const choice = configured?.model ?? (await modelFromSpec(options.model));
  const workspaceDir = resolve(options.workspace);
  const warn = options.warn ?? (() => undefined);
  const tools = workspaceTools({
    root: workspaceDir,
    // The chat's own database (other sessions, a host's on the same file): out of the tools' and the sandbox's reach.
    hiddenPaths: sqliteStatePaths(options.db, workspaceDir),
    ...(options.commandEnv && { commandEnv: options.commandEnv }),
    ...(options.sandbox && { sandbox: options.sandbox }),
    warn,
  });
  // Commands (and MCP servers) a dead chat or host left running end before restart correction reports their turns interrupted.
  await reapLeftoverCommands({ warn });
  // The file's MCP servers, as `turnchart serve` starts them: a required one that cannot start stops the chat here.
  const mcp = configured?.mcpServers ? await McpServers.start(configured.mcpServers, { warn, workspace: workspaceDir }).catch((error: unknown) => Promise.reject(asChatError(error))) : null;
  const storage = sqliteStorage({ filename: options.db });
  const runtime = await createRuntime({
    ...(configured && runtimeOptionsOf(configured)),
    storage,
    model: choice.model,
    tools: [...tools, ...(configured?.tools ?? [])],
    ...(mcp && { toolSources: mcp.sources }),
    warn,
  }).catch(async (error: unknown) => {
    await storage.close().catch(() => undefined);
    await mcp?.close();
    throw asChatError(error);
  });
  const indexes = new Map<string, ToolCallIndex>();
  const agents = new AgentDirectory(runtime, configured?.notes ?? {}, choice.description);

  /** Runs a call, any thrown error as a `ChatError` with its code. */
  const guarded = async <T>(work: () => Promise<T>): Promise<T> => {
    try {
      return await work();
    } catch (error) {
      throw asChatError(error, 'PersistenceError');
    }
  };
  const handle = (sessionId: string): Promise<SessionHandle> =>
    guarded(async () => {
      const open = runtime.openHandle(sessionId);
      return open?.isOpen ? open : runtime.openSession(sessionId);
    });
  /** A command's `{ ok: false, error }` as a thrown `ChatError`. */
  const unwrap = <T extends { ok: true }, E extends { code: string; message?: string }>(result: T | { ok: false; error: E }): T => {
    if (result.ok) return result;
    const { code, message } = result.error;
    throw new ChatError(code, message ?? defaultMessage(code));
  };
  const command = async <K extends ChatCommandName>(name: K, sessionId: string, input: CommandInput<K>): Promise<CommandOk<K>> => {
    const commands: SessionCommands = await handle(sessionId);
    return unwrap(await commands[name](input));
  };

  return {
    kind: 'embedded',
    runtime,
    description: resolve(options.db),
    modelDescription: choice.description,

    async createSession({ permissionMode, agent }) {
      agents.check(agent);
      const session = await guarded(() => runtime.createSession({ workspaceDir, ...(permissionMode && { permissionMode }), ...(agent !== undefined && { agent }) }));
      return { sessionId: session.id, snapshot: session.snapshot(), ...(agent !== undefined && { agent }) };
    },

    listAgents: () => Promise.resolve(agents.list()),

    async openSession(sessionId) {
      const session = await handle(sessionId);
      return { sessionId, snapshot: session.snapshot() };
    },

    async listSessions(limit): Promise<SessionSummary[]> {
      const rows = await guarded(() => storage.listSessions({ limit }));
      return rows.map((row) => {
        const view = runtime.openHandle(row.id)?.snapshot().runtime;
        return {
          sessionId: row.id,
          agent: row.agent,
          permissionMode: row.permissionMode,
          createdAtMs: row.createdAtMs,
          status: view?.kind === 'running' ? view.phase : 'idle',
          lastOutcome: view?.kind === 'terminal' ? view.outcome.status : null,
        };
      });
    },

    submitTurn: (sessionId, input) => command('submitTurn', sessionId, input),
    cancelTurn: (sessionId, turnId) => command('cancelTurn', sessionId, turnId),
    resolvePermission: (sessionId, input) => command('resolvePermission', sessionId, input),
    setPermissionMode: (sessionId, mode) => command('setPermissionMode', sessionId, mode),
    compactConversation: (sessionId) => command('compactConversation', sessionId, undefined),

    async turnStatus(sessionId, turnId) {
      const session = await handle(sessionId);
      const state = unwrap(await guarded(() => session.turnStatus(turnId)));
      return { status: state.status, ...(state.outcome && { outcome: state.outcome }) };
    },

    async context(sessionId) {
      await handle(sessionId);
      const preview = await guarded(() => runtime.inspectContextWindow(sessionId));
      return {
        system: preview.budget.systemContextTokens,
        conversation: preview.budget.conversationTokens,
        tools: preview.budget.toolSurfaceTokens,
        reservedOutput: preview.budget.reservedOutputTokens,
        autoCompactLine: preview.autoCompactTokenLimit,
        window: choice.model.capabilities.contextWindow,
        percentUsed: preview.percentUsed,
      };
    },

    async toolCall(sessionId, toolCallId) {
      let index = indexes.get(sessionId);
      if (!index) {
        index = new ToolCallIndex(async (after, limit) => ({ messages: await storage.listMessages(sessionId, { afterSequence: after, limit }) }));
        indexes.set(sessionId, index);
      }
      return guarded(() => index.find(toolCallId));
    },

    follow(sessionId, listener): Feed {
      const open = runtime.openHandle(sessionId);
      if (!open?.isOpen) {
        const error = new ChatError('SessionClosed', `session ${sessionId} is not open`);
        listener({ kind: 'ended', error });
        const ready = Promise.reject(error);
        ready.catch(() => undefined);
        return { ready, close: () => undefined };
      }
      // Subscribed before the snapshot is read, in the same tick: nothing falls between the two.
      const subscription = open.updates$.subscribe({
        next: (envelope) => listener({ kind: 'update', envelope }),
        complete: () => listener({ kind: 'ended', error: new ChatError('SessionClosed', `session ${sessionId} was closed`) }),
      });
      listener({ kind: 'snapshot', snapshot: open.snapshot(), resumed: false });
      return { ready: Promise.resolve(), close: () => subscription.unsubscribe() };
    },

    /** Stops the runtime: a turn still running ends `actor_stopped`; storage is closed. */
    async close() {
      await runtime.shutdown();
      await mcp?.close();
    },
  };
}
