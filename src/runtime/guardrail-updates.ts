import type { GuardrailTriggered } from '../../machines/guardrails.js';
import { emit, type SessionEnv } from './session-env.js';

/** The `guardrail_triggered` update; `toolName` only where a tool call tripped the rule. */
export function emitGuardrailTriggered(env: SessionEnv, turnId: string, params: GuardrailTriggered): void {
  emit(env, turnId, {
    type: 'guardrail_triggered',
    rule: params.rule,
    level: params.level,
    ...(params.toolName !== undefined && { toolName: params.toolName }),
    count: params.count,
  });
}
