import path from 'node:path';
import { setImmediate } from 'node:timers/promises';
import { z } from 'zod';
import { defineTool, type AnyTool, type ToolExecutionResult } from '../define-tool.js';
import { authorizePath, mustConfine, type Confined } from './confine.js';
import { failed, withFsErrors } from './fs-errors.js';
import { NameGlob } from './glob.js';
import { workspaceOf, type Workspace, type WorkspaceLimits } from './workspace.js';
import { capLine, capOutput } from './output-cap.js';
import { RegexMatcher } from './regex-worker.js';
import { pathField } from './schemas.js';
import { READ_FLAGS, readTextFile, splitLines } from './text-file.js';
import { walkFiles } from './walk.js';
import { messageOf } from '../../protocol/error-message.js';

const input = z.object({
  pattern: z.string().min(1, 'the pattern is empty').max(1_000).describe('a JavaScript regular expression, without slashes or flags'),
  path: pathField.optional().describe('directory or file to search; the workspace root when omitted'),
  include: z.string().min(1).max(200).optional().describe('only files whose name matches this glob, e.g. `*.ts` or `*.{ts,tsx}`'),
});

type Args = z.output<typeof input>;

/** Names the walk passes before it gives the event loop a turn (each costs at most one glob match). */
const NAMES_BETWEEN_YIELDS = 64;

export function grepTool(ws: Workspace): AnyTool {
  return defineTool({
    name: 'grep',
    description:
      'Search files in the workspace for lines matching a JavaScript regular expression, recursively. ' +
      'Skips .git, node_modules and binary files. Output lines are `path:line: text`.',
    effect: 'read',
    input,
    authorize: (args, ctx) => authorizePath(workspaceOf(ws, ctx).root, args.path ?? '.', ws.hidden),
    execute: (args, ctx) =>
      withFsErrors(args.path ?? '.', async () => {
        const invalid = patternError(args.pattern);
        if (invalid) return failed(`invalid regular expression: ${invalid}`);
        const at = workspaceOf(ws, ctx);
        const start = await mustConfine(at.root, args.path ?? '.', at.hidden);
        const matcher = new RegexMatcher(args.pattern);
        try {
          return await search(at, args, start, matcher, ctx.signal);
        } finally {
          await matcher.close();
        }
      }),
  });
}

function patternError(pattern: string): string | null {
  try {
    new RegExp(pattern);
    return null;
  } catch (error) {
    return messageOf(error);
  }
}

/** What one search found and why it stopped, if it stopped early. */
interface Findings {
  lines: string[];
  searched: number;
  skipped: number;
  stopped: string | null;
}

async function search(ws: Workspace, args: Args, start: Confined, matcher: RegexMatcher, signal: AbortSignal): Promise<ToolExecutionResult> {
  const { limits } = ws;
  const include = args.include === undefined ? null : new NameGlob(args.include);
  const deadline = Date.now() + limits.grepTimeoutMs;
  const found: Findings = { lines: [], searched: 0, skipped: 0, stopped: null };
  let named = 0;
  for await (const file of walkFiles(start, ws.hidden)) {
    // A large directory's names arrive without I/O between them: let other sessions' work run now and then.
    if (++named % NAMES_BETWEEN_YIELDS === 0) await setImmediate();
    // Checked here as well as in the matcher: a walk over many non-matching names takes time too.
    if (signal.aborted) return { status: 'cancelled', content: 'grep cancelled' };
    if (Date.now() > deadline) return timedOut(found, limits);
    if (include && !include.matches(path.posix.basename(file.display))) continue;
    if (found.searched === limits.maxGrepFiles) {
      found.stopped = `stopped after searching ${limits.maxGrepFiles} files; narrow the path or the include glob`;
      break;
    }
    const text = await readTextFile(file.open(READ_FLAGS), { maxBytes: limits.maxFileBytes, whenLarger: 'refuse' }).catch(() => null);
    if (text?.kind !== 'text') {
      found.skipped++;
      continue;
    }
    found.searched++;
    const lines = splitLines(text.text);
    const outcome = await matcher.match(lines.map((line) => line.slice(0, limits.maxLineChars)), deadline, signal);
    if (outcome.kind === 'aborted') return { status: 'cancelled', content: 'grep cancelled' };
    if (outcome.kind === 'timeout') return timedOut(found, limits);
    for (const index of outcome.lines) found.lines.push(`${file.display}:${index + 1}: ${capLine(lines[index]!, limits.maxLineChars)}`);
    if (found.lines.length >= limits.maxGrepMatches) {
      found.lines.length = limits.maxGrepMatches;
      found.stopped = `stopped at ${limits.maxGrepMatches} matching lines, there may be more; narrow the pattern or the path`;
      break;
    }
  }
  return { status: 'succeeded', content: capOutput(report(found), limits.maxOutputChars) };
}

function report(found: Findings): string {
  const notes = [
    found.skipped > 0 ? `[skipped ${found.skipped} files that are binary, not UTF-8, unreadable or too large]` : '',
    found.stopped ? `[${found.stopped}]` : '',
  ].filter(Boolean);
  const body = found.lines.length > 0 ? found.lines.join('\n') : `no matches in ${found.searched} files searched`;
  return [body, ...notes].join('\n');
}

function timedOut(found: Findings, limits: WorkspaceLimits): ToolExecutionResult {
  const head =
    `grep timed out after ${limits.grepTimeoutMs} ms, having searched ${found.searched} files: the pattern may backtrack ` +
    'catastrophically, or there are too many files — simplify the pattern or narrow the path.';
  return failed(capOutput(found.lines.length > 0 ? `${head} Matches before then:\n${found.lines.join('\n')}` : head, limits.maxOutputChars));
}
