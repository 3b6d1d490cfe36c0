import { defineConfig } from 'turnchart';

/**
 * Two agents for `turnchart serve --config examples/turnchart.config.ts` (or `npm start -- --config
 * examples/turnchart.config.ts`). Without a `models` key both run on the default model: the demo
 * model, or whatever `--model` / `TURNCHART_MODEL` names.
 */
export default defineConfig({
  permissionMode: 'ask',
  agents: {
    reviewer: {
      description: 'Reads the code and reviews it; never changes anything.',
      instructions: { file: 'instructions/reviewer.md' },
      tools: ['read_file', 'list_dir', 'grep'],
      // The reads it has are allowed without asking; should a write ever reach it, it is refused.
      permissions: { read_file: 'allow', list_dir: 'allow', grep: 'allow', write_file: 'deny', edit_file: 'deny', run_command: 'deny' },
    },
    builder: {
      description: 'Makes the change: reads, edits and runs commands, asking before each write or command.',
      instructions: 'You implement what you are asked in the workspace. Read before you edit, keep changes small, and run the tests when there are any.',
      permissions: { write_file: 'ask', edit_file: 'ask', run_command: 'ask' },
    },
  },
});
