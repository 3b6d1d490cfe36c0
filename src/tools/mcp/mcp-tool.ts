import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import { z } from 'zod';
import type { AnyTool, ToolEffect, ToolExecutionResult } from '../define-tool.js';
import type { CallOptions, McpToolInfo } from './server-connection.js';

/**
 * An MCP server's tool as a turnchart `Tool`:
 *
 * - named `<server>__<tool>` (characters a model's tool name may not hold become `_`; a name over
 *   64 characters, or one that two tools would share, is left out with a warning);
 * - described to the model by the server's own JSON Schema (`inputJsonSchema`), and its arguments
 *   checked against that schema before the call by ajv (compiled once per tool, when the list is
 *   read): `input` wraps the check in zod, so an invalid call gets the same invalid-arguments result
 *   as a native tool's and counts for the guardrails the same way;
 * - its effect from its annotations: `readOnlyHint: true` is a `read` (no approval in `ask`, may run
 *   ahead in parallel); anything else is `execute` — `destructiveHint: false` does not make it a
 *   `write`, since turnchart's `write` means the workspace's files and an MCP tool acts elsewhere
 *   (the two are treated alike by the permission modes anyway). The config may set it per tool;
 * - `idempotentHint` recorded as `idempotent`.
 */

interface McpToolOptions {
  effect?: ToolEffect;
  /** The server's `timeoutMs`: the tool's time limit, and the SDK's own timeout. */
  timeoutMs?: number;
}

/** Makes the call on the connection `sessionId`'s calls go to: the server's one (host scope), or that session's own, in its `workspaceDir` (session scope). */
export type McpCall = (tool: string, args: Record<string, unknown>, options: CallOptions, sessionId: string, workspaceDir?: string) => Promise<ToolExecutionResult>;

/** The longest tool name model APIs take (OpenAI's limit; others are as long or longer). */
const MAX_TOOL_NAME = 64;

const TOOL_NAME_SEPARATOR = '__';

/** `<server>__<tool>` with the tool's name made safe for a model's tool names; null when too long. */
export function exposedToolName(server: string, tool: string): string | null {
  const name = `${server}${TOOL_NAME_SEPARATOR}${tool.replace(/[^A-Za-z0-9_-]/g, '_')}`;
  return name.length <= MAX_TOOL_NAME ? name : null;
}

/** One validator compiler for every MCP tool: draft 2020-12 (which the SDK's servers emit) reads draft-07 schemas too, for what tools use. */
const ajv = new Ajv2020({ strict: false, allErrors: true, validateSchema: false, validateFormats: false, logger: false });

export function mcpTool(name: string, server: string, info: McpToolInfo, call: McpCall, options: McpToolOptions, warn: (message: string) => void): AnyTool {
  const schema = info.inputSchema as Record<string, unknown>;
  const check = compile(schema, name, warn);
  const input = z.record(z.string(), z.unknown()).superRefine((args, ctx) => {
    if (check(args)) return;
    for (const error of (check.errors ?? []).slice(0, 20)) {
      const path = error.instancePath.split('/').slice(1).map((part) => part.replaceAll('~1', '/').replaceAll('~0', '~'));
      ctx.addIssue({ code: 'custom', message: error.message ?? 'is invalid', path, ...(error.params && { params: error.params }) });
    }
  });
  const annotations = info.annotations ?? {};
  return {
    name,
    description: info.description ?? info.title ?? annotations.title ?? `'${info.name}' of the MCP server '${server}'`,
    effect: options.effect ?? (annotations.readOnlyHint === true ? 'read' : 'execute'),
    input,
    inputJsonSchema: schema,
    mcpServer: server,
    ...(annotations.idempotentHint !== undefined && { idempotent: annotations.idempotentHint }),
    ...(options.timeoutMs !== undefined && { timeoutMs: options.timeoutMs }),
    execute: (args, ctx) =>
      call(
        info.name,
        args as Record<string, unknown>,
        {
          signal: ctx.signal,
          ...(options.timeoutMs !== undefined && { timeoutMs: options.timeoutMs }),
          onProgress: ({ progress, total, message }) => ctx.progress({ progress, ...(total !== undefined && { total }), ...(message !== undefined && { message }) }),
        },
        ctx.sessionId,
        ctx.workspaceDir,
      ),
  };
}

/** A schema ajv cannot compile (a `$ref` it cannot resolve, say) is left to the server to check: the tool stays usable. */
function compile(schema: Record<string, unknown>, name: string, warn: (message: string) => void): ValidateFunction {
  try {
    const own = stripSchemaKeywords(schema);
    const validate = ajv.compile(own);
    // The compiled function stands alone; out of ajv's cache, a refreshed list does not grow it forever.
    ajv.removeSchema(own);
    return validate;
  } catch (error) {
    warn(`the input schema of ${name} cannot be compiled (${(error as Error).message}); its arguments are left to the server to check`);
    return Object.assign(() => true, { errors: null }) as unknown as ValidateFunction;
  }
}

/** `$schema` names a dialect ajv may not have loaded, and `$id` would make a second tool with the same id fail to compile: neither changes what is valid here. */
function stripSchemaKeywords(schema: Record<string, unknown>): Record<string, unknown> {
  const { $schema: _schema, $id: _id, ...rest } = schema;
  return rest;
}
