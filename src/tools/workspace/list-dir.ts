import type { Dirent } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { z } from 'zod';
import { defineTool, type AnyTool } from '../define-tool.js';
import { openDirBeneath } from './beneath.js';
import path from 'node:path';
import { authorizePath, hiddenPlaces, isHidden, mustConfine } from './confine.js';
import { withFsErrors } from './fs-errors.js';
import { workspaceOf, type Workspace } from './workspace.js';
import { capOutput } from './output-cap.js';
import { pathField } from './schemas.js';

const input = z.object({ path: pathField.optional().describe('directory to list; the workspace root when omitted') });

export function listDirTool(ws: Workspace): AnyTool {
  return defineTool({
    name: 'list_dir',
    description:
      'List a directory in the workspace, sorted by name. Directories end with `/`, symbolic links with `@`.',
    effect: 'read',
    input,
    authorize: (args, ctx) => authorizePath(workspaceOf(ws, ctx).root, args.path ?? '.', ws.hidden),
    execute: (args, ctx) =>
      withFsErrors(args.path ?? '.', async () => {
        const target = await mustConfine(workspaceOf(ws, ctx).root, args.path ?? '.', ws.hidden);
        const dir = await openDirBeneath(target.root, target.relative);
        let entries: Dirent[];
        try {
          entries = await readdir(dir.self(), { withFileTypes: true });
        } finally {
          await dir.close();
        }
        // The host's own state is passed over, as if it were not there (a link to it is listed, and refused when followed).
        if (ws.hidden.length > 0) {
          const hidden = await hiddenPlaces(ws.hidden);
          entries = entries.filter((entry) => !isHidden(hidden, path.join(target.real, entry.name)));
        }
        if (entries.length === 0) return { status: 'succeeded', content: `(${target.relative} is empty)` };
        const listing = entries.sort((a, b) => byCodePoint(a.name, b.name)).map(label).join('\n');
        return { status: 'succeeded', content: capOutput(listing, ws.limits.maxOutputChars) };
      }),
  });
}

/** `ls -F` marks: a link is marked as a link, not as what it points to, so listing never follows it. */
function label(entry: Dirent): string {
  if (entry.isDirectory()) return `${entry.name}/`;
  if (entry.isSymbolicLink()) return `${entry.name}@`;
  return entry.name;
}

/** Locale-independent, so the same directory always lists the same way. */
function byCodePoint(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
