import type { AuthorizationDecision } from '../protocol/tool-result.js';
import type { AnyTool, AuthorizeContext } from './define-tool.js';

/**
 * RT-16 with the session's permission mode (RT-5): a tool's own `authorize` may always deny or
 * ask; `read_only` rule-denies anything that is not a read; `ask` asks before writes and executes;
 * `auto` runs the rest.
 */
export async function authorizeCall(tool: AnyTool, args: unknown, ctx: AuthorizeContext): Promise<AuthorizationDecision> {
  const own: AuthorizationDecision = tool.authorize ? await tool.authorize(args, ctx) : { decision: 'allow' };
  if (own.decision === 'deny') return { decision: 'deny', reason: own.reason ?? `'${tool.name}' is not permitted` };
  if (ctx.permissionMode === 'read_only' && tool.effect !== 'read') {
    return { decision: 'deny', reason: `the session is read-only and '${tool.name}' can ${tool.effect}` };
  }
  if (own.decision === 'ask') return { decision: 'ask', paths: own.paths ?? [] };
  if (ctx.permissionMode === 'ask' && tool.effect !== 'read') return { decision: 'ask', paths: [] };
  return { decision: 'allow' };
}
