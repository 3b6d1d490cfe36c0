import { z } from 'zod';
import type { ModelRequest, SystemPart } from '../protocol/model.js';
import type { ToolResult } from '../protocol/tool-result.js';
import type { PermissionMode } from '../protocol/commands.js';

/**
 * RL-4: hooks around context build and tool dispatch, given on `createRuntime({ hooks })` and per
 * agent (`agents: { name: { hooks } }`). For each stage the runtime's hook runs first, then the
 * agent's. Every hook gets an `AbortSignal` that a cancel, a stop or the hook's time limit aborts.
 */

/** What every hook is told. */
export interface HookContext {
  sessionId: string;
  turnId: string;
  /** The session's agent. */
  agent: string;
  /** The session's permission mode at the time the hook runs. */
  mode: PermissionMode;
  /** Aborted when the turn is cancelled or stopped, or when the hook passes its time limit. */
  signal: AbortSignal;
}

export interface ContextHookContext extends HookContext {
  /** The model call this context is built for, from 1. */
  modelCallIndex: number;
}

export interface AfterContextHookContext extends ContextHookContext {
  /** A copy of the request as built: changing it changes nothing. */
  request: ModelRequest;
  estimatedInputTokens: number;
}

/** System parts to add after the agent's own (CW-8: each under 10 000 estimated tokens, keys unique). */
export interface ContextHookResult {
  systemParts?: SystemPart[];
}

export interface ToolHookContext extends HookContext {
  toolCallId: string;
  toolName: string;
  /** A copy of the arguments as validated (or as an earlier hook rewrote them). */
  args: Record<string, unknown>;
}

/** Nothing (or `allow`) lets the call go on; `deny` gives the model a `denied` result; `rewrite` replaces the arguments, validated again. */
export type DispatchDecision =
  | { decision: 'allow' }
  | { decision: 'deny'; reason?: string }
  | { decision: 'rewrite'; args: Record<string, unknown> };

export interface AfterDispatchContext extends ToolHookContext {
  /** A copy of the result the tool produced: the hook sees it, it cannot change it. */
  result: ToolResult;
}

type Awaitable<T> = T | Promise<T>;

export interface Hooks {
  beforeContextBuild?: (ctx: ContextHookContext) => Awaitable<ContextHookResult | void>;
  afterContextBuild?: (ctx: AfterContextHookContext) => Awaitable<ContextHookResult | void>;
  beforeToolDispatch?: (ctx: ToolHookContext) => Awaitable<DispatchDecision | void>;
  afterToolDispatch?: (ctx: AfterDispatchContext) => Awaitable<void>;
  /** Each hook's time limit in ms (default 5 000): past it the hook's signal aborts and it fails `hook_timeout`. */
  timeoutMs?: number;
}

export type HookStage = 'beforeContextBuild' | 'afterContextBuild' | 'beforeToolDispatch' | 'afterToolDispatch';

export const DEFAULT_HOOK_TIMEOUT_MS = 5_000;

const hook = z.function().optional();

export const hooksSchema = z
  .object({
    beforeContextBuild: hook,
    afterContextBuild: hook,
    beforeToolDispatch: hook,
    afterToolDispatch: hook,
    timeoutMs: z.number().int().min(1).max(2_147_483_647).optional(),
  })
  .strict();

/** One hook as the runtime runs it: where it was configured, and its time limit. */
export interface ResolvedHook<F> {
  owner: 'runtime' | 'agent';
  run: F;
  timeoutMs: number;
}

/** A session's hooks per stage, the runtime's before the agent's. */
export type ResolvedHooks = {
  [S in HookStage]: ResolvedHook<NonNullable<Hooks[S]>>[];
};

const NO_HOOKS: ResolvedHooks = Object.freeze({
  beforeContextBuild: [],
  afterContextBuild: [],
  beforeToolDispatch: [],
  afterToolDispatch: [],
});

const STAGES: readonly HookStage[] = ['beforeContextBuild', 'afterContextBuild', 'beforeToolDispatch', 'afterToolDispatch'];

/** The hooks an agent's sessions run: the runtime's, then the agent's own; an agent without a limit takes the runtime's. */
export function resolveHooks(runtime: Hooks | undefined, agent: Hooks | undefined): ResolvedHooks {
  if (!runtime && !agent) return NO_HOOKS;
  const runtimeLimit = runtime?.timeoutMs ?? DEFAULT_HOOK_TIMEOUT_MS;
  const levels = [
    { owner: 'runtime' as const, hooks: runtime, timeoutMs: runtimeLimit },
    { owner: 'agent' as const, hooks: agent, timeoutMs: agent?.timeoutMs ?? runtimeLimit },
  ];
  const resolved = {} as Record<HookStage, ResolvedHook<unknown>[]>;
  for (const stage of STAGES) {
    resolved[stage] = levels.flatMap(({ owner, hooks, timeoutMs }) => (hooks?.[stage] ? [{ owner, run: hooks[stage] as unknown, timeoutMs }] : []));
  }
  return resolved as ResolvedHooks;
}

/** A key is at most this long; longer ones are a hook's mistake, not a part. */
const MAX_PART_KEY = 200;

export const contextHookResultSchema = z.union([
  z.undefined(),
  z
    .object({
      systemParts: z
        .array(z
            .object({
              key: z.string().max(MAX_PART_KEY).refine((key) => key.trim() !== '', 'a system part needs a key'),
              content: z.string(),
            })
            .strict())
        .max(32)
        .optional(),
    })
    .strict(),
]);

export const dispatchDecisionSchema = z.union([
  z.undefined(),
  z.discriminatedUnion('decision', [
    z.object({ decision: z.literal('allow') }).strict(),
    z.object({ decision: z.literal('deny'), reason: z.string().max(4_000).optional() }).strict(),
    z.object({ decision: z.literal('rewrite'), args: z.record(z.string(), z.unknown()) }).strict(),
  ]),
]);
