import { z } from 'zod';
import { defineTool, type AnyTool } from '../define-tool.js';
import { authorizePath, mustConfine } from './confine.js';
import { failed, withFsErrors } from './fs-errors.js';
import { workspaceOf, type Workspace } from './workspace.js';
import { pathField } from './schemas.js';
import { writeFileBeneath } from './beneath.js';

export function writeFileTool(ws: Workspace): AnyTool {
  const input = z.object({
    path: pathField,
    content: z.string().max(ws.limits.maxFileBytes, `content is longer than ${ws.limits.maxFileBytes} characters`),
  });
  return defineTool({
    name: 'write_file',
    description: 'Create or overwrite a text file in the workspace with `content`, creating missing parent directories.',
    effect: 'write',
    input,
    authorize: (args, ctx) => authorizePath(workspaceOf(ws, ctx).root, args.path, ws.hidden),
    approvalPaths: (args) => [args.path],
    execute: (args, ctx) =>
      withFsErrors(args.path, async () => {
        const target = await mustConfine(workspaceOf(ws, ctx).root, args.path, ws.hidden);
        if (target.relative === '.') return failed('the workspace root is a directory, not a file');
        const written = await writeFileBeneath(target.root, target.relative, args.content, { createParents: true });
        if (written.refused) return failed(written.refused);
        return { status: 'succeeded', content: `wrote ${Buffer.byteLength(args.content)} bytes to ${target.relative}` };
      }),
  });
}
