import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { PassThrough, Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { chatSettings, runChat } from '../../src/cli/chat.js';
import { useTempDirs } from '../support/workspace.js';

const tempDir = useTempDirs('turnchart-chat-end-');

/**
 * Issue 29's transcript, in process: a script whose end is already there when its last command
 * finishes. The turn and `/context` run without I/O here (SQLite, a scripted model, the world state
 * read by `lstat`s), so the step that prints the last answer and asks for the next prompt ends before
 * the event loop has read the input's end. The end is made to arrive exactly there, as the output
 * writes `/context`'s last line: the chat must not leave a prompt standing after it.
 */
describe('turnchart chat from a script whose end waits in the input', () => {
  it('draws no prompt after the last command when the input ended meanwhile', async () => {
    const workspace = await tempDir();
    const model = path.join(workspace, '.model.json');
    await writeFile(model, JSON.stringify([{ text: 'Hello back.' }]));
    const input = new PassThrough();
    let output = '';
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        output += chunk.toString('utf8');
        // `/context`'s last line: the script's end comes now, before the chat's step is over.
        if (/auto-compact at [\d,]+ of a/.test(output) && !input.writableEnded) input.end();
        done();
      },
    });
    const settings = chatSettings(['--db', path.join(workspace, 'chat.db'), '--workspace', workspace, '--model', `scripted:${model}`], {});
    const exit = runChat(settings, { input, output: sink, env: {} });
    input.write('hello\n/context\n');
    expect(await exit).toBe(0);
    expect(output).toMatch(/› hello\nHello back\.\n✓ completed\n› \/context\ncontext /);
    expect(output).toMatch(/auto-compact at [\d,]+ of a [\d,]+-token window \(input [\d,]+\)\n$/);
  });
});
