import { z } from 'zod';
import { defineTool, type AnyTool } from '../define-tool.js';
import { authorizePath, mustConfine } from './confine.js';
import { failed, withFsErrors } from './fs-errors.js';
import { workspaceOf, type Workspace } from './workspace.js';
import { pathField } from './schemas.js';
import { openFileBeneath, writeFileBeneath } from './beneath.js';
import { READ_FLAGS, readTextFile } from './text-file.js';

export function editFileTool(ws: Workspace): AnyTool {
  const text = z.string().max(ws.limits.maxFileBytes);
  const input = z.object({ path: pathField, oldText: text.min(1, 'oldText is empty'), newText: text });
  return defineTool({
    name: 'edit_file',
    description:
      'Replace the one exact occurrence of `oldText` in a text file with `newText`. Refused, file unchanged, ' +
      'when `oldText` is not found or occurs more than once: include more surrounding text to make it unique.',
    effect: 'write',
    input,
    authorize: (args, ctx) => authorizePath(workspaceOf(ws, ctx).root, args.path, ws.hidden),
    approvalPaths: (args) => [args.path],
    execute: (args, ctx) =>
      withFsErrors(args.path, async () => {
        const target = await mustConfine(workspaceOf(ws, ctx).root, args.path, ws.hidden);
        const file = await readTextFile(openFileBeneath(target.root, target.relative, READ_FLAGS), { maxBytes: ws.limits.maxFileBytes, whenLarger: 'refuse' });
        if (file.kind === 'refused') return failed(`'${target.relative}' ${file.reason}`);
        const count = occurrences(file.text, args.oldText);
        if (count === 0) return failed(`oldText was not found in '${target.relative}'; the file is unchanged`);
        if (count > 1) return failed(`oldText occurs ${count} times in '${target.relative}'; it must occur exactly once. The file is unchanged`);
        const at = file.text.indexOf(args.oldText);
        // Sliced, not String.replace: `$&` and friends in newText must be written as they are.
        const written = await writeFileBeneath(target.root, target.relative, file.text.slice(0, at) + args.newText + file.text.slice(at + args.oldText.length), {
          createParents: false,
        });
        if (written.refused) return failed(written.refused);
        return { status: 'succeeded', content: `edited ${target.relative}: replaced 1 occurrence` };
      }),
  });
}

/** Counted overlapping: in 'aaa', 'aa' occurs twice, and replacing either would be a guess. */
export function occurrences(text: string, needle: string): number {
  let count = 0;
  for (let at = text.indexOf(needle); at !== -1; at = text.indexOf(needle, at + 1)) count++;
  return count;
}
