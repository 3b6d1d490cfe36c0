import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { ToolExecutionResult } from '../define-tool.js';
import { DEFAULT_MAX_OUTPUT_CHARS } from '../workspace/workspace.js';
import { capOutput } from '../workspace/output-cap.js';

/**
 * An MCP `CallToolResult` as a turnchart tool result. The model adapter carries text only, so every
 * content block becomes text: text as it is, an image or audio clip and a resource link described
 * in one line (`[image image/png, 1234 bytes]`, `[resource link: uri (name)]`), an embedded resource
 * as its text (or described, when it is a blob). `structuredContent` is added as JSON when the
 * result has no text block: the spec asks servers to send a text rendition of it as well, and those
 * that do (server-filesystem sends `{ content }` beside the same text) would otherwise double the
 * output. `isError: true` makes the
 * call `failed`. The whole is bounded like the workspace tools' output, with the same note.
 */
export function callResultOf(result: CallToolResult, maxChars = DEFAULT_MAX_OUTPUT_CHARS): ToolExecutionResult {
  const parts = (result.content ?? []).map(describeBlock);
  const structured = result.structuredContent;
  const hasText = (result.content ?? []).some((block) => block.type === 'text');
  if (structured !== undefined && !hasText) parts.push(JSON.stringify(structured, null, 2));
  const text = parts.join('\n');
  const status = result.isError === true ? 'failed' : 'succeeded';
  return { status, content: capOutput(text === '' ? (status === 'failed' ? '(the tool failed without saying why)' : '(no output)') : text, maxChars) };
}

type Block = CallToolResult['content'][number];

function describeBlock(block: Block): string {
  switch (block.type) {
    case 'text':
      return block.text;
    case 'image':
    case 'audio':
      return `[${block.type} ${block.mimeType}, ${base64Bytes(block.data)} bytes]`;
    case 'resource_link':
      return `[resource link: ${block.uri}${block.name ? ` (${block.name})` : ''}]`;
    case 'resource': {
      const resource = block.resource;
      if ('text' in resource && typeof resource.text === 'string') return resource.text;
      const blob = 'blob' in resource && typeof resource.blob === 'string' ? resource.blob : '';
      return `[resource ${resource.uri}${resource.mimeType ? ` ${resource.mimeType}` : ''}, ${base64Bytes(blob)} bytes]`;
    }
    default:
      return `[${(block as { type?: unknown }).type as string} content]`;
  }
}

/** The decoded size of base64 text, without decoding it. */
function base64Bytes(data: string): number {
  const trimmed = data.replace(/\s/g, '');
  const padding = trimmed.endsWith('==') ? 2 : trimmed.endsWith('=') ? 1 : 0;
  return Math.max(0, Math.floor((trimmed.length * 3) / 4) - padding);
}
