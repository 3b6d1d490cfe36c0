/** turnchart — an actor-model runtime for AI-agent sessions on XState v5 statecharts. */

export { createRuntime, Runtime, type RuntimeOptions } from './runtime/runtime.js';
export { SessionHandle } from './runtime/session-handle.js';
export { ContextEngine, prepare, type PrepareSources, type PreparedModelCall, ContextAssemblyError } from './context/engine.js';
export { measureBudget, type ContextBudgetEstimate } from './context/budget.js';
export type { ContextWindowPreview } from './context/preview.js';
export { contextLimits, reachesCompactionLine, type ModelContextLimits } from './context/limits.js';
export type { ConversationItem, Provenance } from './context/conversation.js';
export { ChatState, ChatStateError } from './runtime/chat-state.js';
export type { SkillsConfig } from './skills/types.js';
export { EFFECT_PORT, type EffectContract, type EffectCall } from '../machines/effect-port.js';
export { REPLAY_CAPACITY } from './runtime/update-stream.js';
export { DEFAULT_AGENTS, type AgentConfig, type AgentDefinition } from './runtime/agents.js';
export {
  DEFAULT_HOOK_TIMEOUT_MS,
  type Hooks,
  type HookContext,
  type ContextHookContext,
  type AfterContextHookContext,
  type ContextHookResult,
  type ToolHookContext,
  type AfterDispatchContext,
  type DispatchDecision,
} from './runtime/hooks.js';
export type { ChartClock } from './runtime/chart-clock.js';
export type { SpanObserver } from './runtime/trace-recorder.js';
export {
  type GuardrailsConfig,
  type GuardrailProfileName,
  type OnMistakeLimit,
  type MistakeLimitContext,
  type MistakeLimitDecision,
} from './runtime/guardrail-profiles.js';
export { CONCLUDE_INSTRUCTION } from './runtime/turn-effects.js';
export { defineConfig, type TurnchartConfig } from './cli/define-config.js';

export { defineTool, type Tool, type AnyTool, type ToolEffect, type ExecuteContext, type AuthorizeContext, type ToolExecutionResult } from './tools/define-tool.js';
export { UPDATE_PLAN } from './tools/toolset.js';
export type { ToolSource } from './tools/tool-source.js';
export type { PermissionRules, RuleDecision, MatchedRule } from './protocol/permission-rule.js';
export { sqliteStatePaths, workspaceTools, type WorkspaceToolsOptions, type WorkspaceLimits } from './tools/workspace/index.js';
export { McpServers, mcpServersSchema, type McpServersConfig, type McpServersOptions } from './tools/mcp/index.js';
export { reapLeftoverCommands, type ReapReport } from './tools/sandbox/index.js';
export { scriptedModel, type ScriptedModel, type ScriptedStep, type ScriptedReply, type ScriptedToolCall } from './model/scripted-model.js';
export { aiSdkModel, type AiSdkModelOptions } from './model/ai-sdk-model.js';

export { sessionMachine } from '../machines/session.machine.js';
export {
  embeddedSessionMachine,
  type SessionCommand,
  type CommandAnswer,
  type PermissionRequest,
  type TurnchartParentEvent,
  type EmbeddedSessionEmitted,
  type EmbeddedSessionInput,
  type EmbeddedSessionOutput,
} from '../machines/embedded-session.machine.js';
export type { SessionLogic } from './runtime/session-logic.js';
export { turnMachine } from '../machines/turn.machine.js';
export { toolCallMachine } from '../machines/tool-call.machine.js';
export { stallWatchdogMachine } from '../machines/stall-watchdog.machine.js';
export {
  observeCall,
  detectCycle,
  normalizeArguments,
  tallyResult,
  mistakesAfter,
  type LoopRules,
  type LoopTracker,
  type LoopVerdict,
  type GuardrailLimits,
} from '../machines/guardrails.js';
export { taskMachine, TASK_TRANSITIONS, isTaskTransition, type TaskState, type TaskReply } from '../machines/task.machine.js';
export type { AdmissionDecision, RiskLevel } from '../machines/task.effects.js';
export * from './tasks/index.js';
export { AmqpLink, type AmqpLinkOptions } from './transport/amqp-link.js';
export { startHost, type HostOptions, type RunningHost } from './host/host.js';
export { otelSpans, OtelSpans, type OtelSpanOptions } from './telemetry/otel-spans.js';
export type { ContentLimits } from './telemetry/genai-content.js';
export type { Authenticate } from './host/auth.js';
export type { JwtSettings, JwtKeys } from './host/jwt-verifier.js';
export { ADMIN_ROLE, type Caller } from './protocol/principal.js';
export type { LogFields, Warn } from './protocol/log-fields.js';

export { sqliteStorage } from '../storage/sqlite.js';
export { postgresStorage, postgresTaskStorage } from '../storage/postgres.js';
export { sqliteTaskStorage } from '../storage/sqlite.js';
export type { TaskStorage, TaskRow, TaskEventRow, TaskControl } from '../storage/task-storage.js';
export { withFaults, StorageFaultError, type FaultyStorage } from '../storage/faulty-storage.js';
export type { SessionStorage, SessionRow, TurnRow, SpanEnd } from '../storage/session-storage.js';

export type { PermissionMode, BusyPolicy, TriggerType } from './protocol/commands.js';
export type { SessionSnapshot, RuntimeView, LiveToolCall, PendingApproval } from './protocol/session-snapshot.js';
export type {
  StartTurnResult,
  CancelTurnResult,
  ResolvePermissionResult,
  DeliverResult,
  SetModeResult,
  SwitchAgentResult,
  WaitResult,
  CompactResult,
  RewindResult,
  ReplayResult,
} from './protocol/command-results.js';
export { taskSpecSchema, DEFAULT_MAX_DURATION_MS, type TaskSpec, type TaskSubmission } from './protocol/task-spec.js';
export * from './protocol/messages.js';
export * from './protocol/model.js';
export * from './protocol/outcome.js';
export * from './protocol/plan.js';
export * from './protocol/updates.js';
export * from './protocol/trace.js';
export * from './protocol/usage.js';
export * from './protocol/audit.js';
export type { ToolFailureKind, ToolRetryPolicyConfig } from './protocol/tool-retry.js';
export type { JsonValue, ProviderMetadata, ContentBlock, AssistantProviderData } from './protocol/provider-data.js';
export { TurnchartError } from './protocol/errors.js';
export { TurnFailure, type ToolResult, type AuthorizationDecision } from './protocol/tool-result.js';
