import type { ToolEffect } from './define-tool.js';
import type { PermissionMode } from '../protocol/commands.js';

/**
 * RT-5/RT-16: what the session's permission mode says about a tool, read by the tool-call chart's
 * guards after the tool's own `authorize` hook (which may always deny or ask).
 * `read_only` rule-denies anything but reads; `ask` wants approval for writes and executes.
 */
export function modeForbids(mode: PermissionMode, effect: ToolEffect): boolean {
  return mode === 'read_only' && effect !== 'read';
}

export function modeRequiresApproval(mode: PermissionMode, effect: ToolEffect): boolean {
  return mode === 'ask' && effect !== 'read';
}
