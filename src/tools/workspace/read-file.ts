import { z } from 'zod';
import { defineTool, type AnyTool } from '../define-tool.js';
import { authorizePath, mustConfine } from './confine.js';
import { failed, withFsErrors } from './fs-errors.js';
import { workspaceOf, type Workspace, type WorkspaceLimits } from './workspace.js';
import { capLine, truncationNote } from './output-cap.js';
import { pathField } from './schemas.js';
import { openFileBeneath } from './beneath.js';
import { READ_FLAGS, readTextFile, splitLines } from './text-file.js';

const input = z.object({
  path: pathField,
  offset: z.number().int().min(1).max(100_000_000).optional().describe('first line to read, 1-based'),
  limit: z.number().int().min(1).max(1_000_000).optional().describe('how many lines to read'),
});

type Args = z.output<typeof input>;

export function readFileTool(ws: Workspace): AnyTool {
  return defineTool({
    name: 'read_file',
    description:
      'Read a UTF-8 text file in the workspace. Lines are numbered; `offset` (1-based) and `limit` select lines. ' +
      'Binary and non-UTF-8 files are refused.',
    effect: 'read',
    input,
    authorize: (args, ctx) => authorizePath(workspaceOf(ws, ctx).root, args.path, ws.hidden),
    execute: (args, ctx) => withFsErrors(args.path, () => readLines(workspaceOf(ws, ctx), args)),
  });
}

async function readLines(ws: Workspace, args: Args) {
  const target = await mustConfine(ws.root, args.path, ws.hidden);
  const file = await readTextFile(openFileBeneath(target.root, target.relative, READ_FLAGS), { maxBytes: ws.limits.maxFileBytes, whenLarger: 'read_prefix' });
  if (file.kind === 'refused') return failed(`'${target.relative}' ${file.reason}`);
  if (file.text === '') return { status: 'succeeded' as const, content: file.truncated ? prefixNote(file.size, ws.limits) : '(empty file)' };
  const lines = splitLines(file.text);
  const first = args.offset ?? 1;
  if (first > lines.length) {
    return failed(`'${target.relative}' has ${lines.length} lines${file.truncated ? ' in its readable part' : ''}; offset ${first} is past the end`);
  }
  const last = Math.min(lines.length, first - 1 + (args.limit ?? lines.length));
  const content = numbered(lines, first, last, ws.limits);
  return { status: 'succeeded' as const, content: file.truncated && last === lines.length ? `${content}\n${prefixNote(file.size, ws.limits)}` : content };
}

/**
 * `cat -n` style, stopping before the output cap with a note that says where to read on. The
 * first line is always shown, cut to the cap if need be, so a read always makes progress.
 */
function numbered(lines: string[], first: number, last: number, limits: WorkspaceLimits): string {
  const width = String(last).length;
  const lineChars = Math.min(limits.maxLineChars, limits.maxOutputChars);
  const out: string[] = [];
  let chars = 0;
  for (let n = first; n <= last; n++) {
    const line = `${String(n).padStart(width)}\t${capLine(lines[n - 1]!, lineChars)}`;
    if (chars + line.length + 1 > limits.maxOutputChars && out.length > 0) {
      const total = last - first + 1;
      return out.join('\n') + truncationNote(out.length, total, 'lines', `read on with offset=${n}`);
    }
    out.push(line);
    chars += line.length + 1;
  }
  return out.join('\n');
}

function prefixNote(size: number, limits: WorkspaceLimits): string {
  return `[file is ${size} bytes; only the lines in its first ${limits.maxFileBytes} bytes can be read — use grep or run_command for the rest]`;
}
