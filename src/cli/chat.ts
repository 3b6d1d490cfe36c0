import { randomUUID } from 'node:crypto';
import { resolve } from 'node:path';
import { z } from 'zod';
import { permissionModeSchema } from '../protocol/commands.js';
import { asChatError, type ChatClient } from './chat-client.js';
import { startChat } from './chat-controller.js';
import { embeddedChatClient } from './chat-embedded.js';
import { formatError } from './chat-format.js';
import { browseHistory } from './chat-history.js';
import { httpChatClient } from './chat-http.js';
import { isHistoryMirror } from '../../storage/history-mirror.js';
import { isInteractive, startInput } from './chat-input.js';
import { Screen } from './chat-screen.js';
import { commandEnvFlagSchema } from '../tools/sandbox/command-environment.js';
import { sandboxChoiceSchema } from '../tools/sandbox/command-sandbox.js';
import type { LoadedConfig } from './config-file.js';
import { layeredValues, settingsProblem } from './setting-layers.js';

/** `turnchart chat`: each flag also read from its environment variable, flags winning; embedded, the configuration file comes last. */
const FLAGS = {
  url: { env: 'TURNCHART_URL', help: 'a running host to talk to (default: embedded, no host)' },
  config: { env: 'TURNCHART_CONFIG', help: 'embedded: configuration file, as for serve (default: ./turnchart.config.ts … when there is one)' },
  agent: { env: undefined, help: 'the agent of the new session (/agents lists them; default: the default agent)' },
  token: { env: 'TURNCHART_TOKEN', help: 'the host\'s bearer token' },
  session: { env: undefined, help: 'continue this session (default: a new one)' },
  mode: { env: undefined, help: 'permission mode of the new session: ask, auto or read_only (default ask)' },
  db: { env: 'TURNCHART_DB', help: 'embedded: SQLite file (default .turnchart/turnchart.db); a history mirror (serve --mirror-sqlite) is browsed read-only' },
  workspace: { env: 'TURNCHART_WORKSPACE', help: 'embedded: directory the sessions work in (default: the current directory)' },
  model: { env: 'TURNCHART_MODEL', help: 'embedded: scripted:FILE (default: the demo model)' },
  'command-env': { env: 'TURNCHART_COMMAND_ENV', multiple: true, help: 'embedded: variables run_command passes to commands (repeatable or comma-separated)' },
  sandbox: { env: 'TURNCHART_SANDBOX', help: "embedded: run_command's sandbox, auto, bwrap or off, as for serve (default auto)" },
} as const;

type Flag = keyof typeof FLAGS;

const EMBEDDED_ONLY: Flag[] = ['config', 'db', 'workspace', 'model', 'command-env', 'sandbox'];

const settingsSchema = z.object({
  url: z.url({ protocol: /^https?$/ }).optional(),
  config: z.string().optional(),
  agent: z.string().min(1).max(200).optional(),
  token: z.string().min(1).optional(),
  session: z.string().min(1).max(200).optional(),
  mode: permissionModeSchema.optional(),
  db: z.string().min(1).default(resolve('.turnchart', 'turnchart.db')),
  workspace: z.string().min(1).default('.'),
  model: z.string().optional(),
  'command-env': commandEnvFlagSchema.default([]),
  sandbox: sandboxChoiceSchema.default('auto'),
});

export type ChatSettings = z.infer<typeof settingsSchema>;

export function chatUsage(): string {
  const lines = Object.entries(FLAGS).map(([name, { env, help }]) => `  --${name.padEnd(10)} ${help}${env ? ` [${env}]` : ''}`);
  return [
    'Usage: turnchart chat [options]',
    '',
    'An interactive chat in the terminal, with a running host (--url) or embedded on a local database.',
    '',
    ...lines,
    '',
    'In the chat: /help lists the commands; Ctrl+C cancels the running turn; Ctrl+D or /exit leaves.',
  ].join('\n');
}

/**
 * Flags over environment variables (over the configuration file, embedded), validated; throws a
 * message fit for the terminal. Against a host (`--url`) the file is not read: the host has its own.
 */
export function chatSettings(args: string[], env: NodeJS.ProcessEnv, file: LoadedConfig | null = null): ChatSettings & { modelFromFlags: boolean } {
  const flagsOnly = layeredValues(args, env, FLAGS, null);
  const url = flagsOnly.values.url;
  const given = (name: Flag) => flagsOnly.origin(name) === 'flag';
  if (url) {
    const misplaced = EMBEDDED_ONLY.filter(given);
    if (misplaced.length > 0) {
      const names = misplaced.map((name) => `--${name}`).join(', ');
      throw new Error(`${names} ${misplaced.length === 1 ? 'applies' : 'apply'} only to the embedded chat, not with --url`);
    }
  } else if (given('token')) {
    throw new Error('--token only applies with --url');
  }
  const layers = url ? flagsOnly : layeredValues(args, env, FLAGS, file);
  const merged = { ...layers.values };
  if (!url) delete merged.token;
  const parsed = settingsSchema.safeParse(merged);
  if (!parsed.success) throw new Error(settingsProblem(parsed.error, layers.sourceOf));
  return { ...parsed.data, modelFromFlags: layers.origin('model') !== 'file' && parsed.data.model !== undefined };
}

export interface ChatIo {
  input: NodeJS.ReadableStream & { isTTY?: boolean };
  output: NodeJS.WritableStream & { isTTY?: boolean };
  env: NodeJS.ProcessEnv;
}

/** Runs the chat until the user leaves; resolves with the exit code. */
export async function runChat(settings: ChatSettings & { modelFromFlags?: boolean }, io: ChatIo, config: LoadedConfig | null = null): Promise<number> {
  const tty = Boolean(io.output.isTTY);
  const screen = new Screen(io.output, { tty, color: tty && io.env.NO_COLOR === undefined && io.env.TERM !== 'dumb' });
  // A history mirror is a copy to read, never a database to run turns on.
  if (!settings.url && isHistoryMirror(settings.db)) {
    try {
      return await browseHistory(settings.db, settings.session, screen);
    } catch (error) {
      screen.line(formatError(asChatError(error), screen.paint));
      return 1;
    } finally {
      screen.close();
    }
  }
  let client: ChatClient;
  try {
    if (settings.url) {
      client = httpChatClient({ url: settings.url, token: settings.token ?? null });
      screen.line(`${screen.paint('bold', 'turnchart chat')} ${screen.paint('dim', `— host ${client.description}`)}`);
    } else {
      const embedded = await embeddedChatClient({
        db: settings.db,
        workspace: settings.workspace,
        ...(settings.model !== undefined && { model: settings.model }),
        commandEnv: settings['command-env'],
        sandbox: settings.sandbox,
        config,
        modelFromFlags: settings.modelFromFlags ?? false,
        warn: (message) => screen.line(screen.paint('dim', `turnchart: ${message}`)),
      });
      client = embedded;
      screen.line(
        `${screen.paint('bold', 'turnchart chat')} ${screen.paint('dim', `— embedded on ${embedded.description}; workspace ${resolve(settings.workspace)}; ${embedded.modelDescription}`)}`,
      );
    }
  } catch (error) {
    screen.line(formatError(asChatError(error), screen.paint));
    return 1;
  }
  screen.line(screen.paint('dim', 'Type /help for commands. Ctrl+C cancels a running turn; Ctrl+D or /exit leaves.'));
  const interactive = isInteractive(io.input, screen);
  const chat = startChat(client, screen, {
    backend: client.kind,
    interactive,
    sessionId: settings.session ?? null,
    newSessionMode: settings.mode ?? null,
    newSessionAgent: settings.agent ?? null,
    requestPrefix: `chat-${randomUUID()}`,
  });
  const input = startInput({ input: io.input, output: io.output, screen, interactive, send: (event) => {
      // Input after the chat ended (lines still buffered) is dropped.
      if (chat.actor.getSnapshot().status === 'active') chat.actor.send(event);
    },
  });
  let code = 0;
  try {
    await chat.done;
  } catch (error) {
    // A fault of the chat itself: said, and the backend closed as when leaving.
    screen.line(formatError(asChatError(error), screen.paint));
    await client.close().catch(() => undefined);
    code = 1;
  } finally {
    input.close();
    screen.close();
  }
  return code;
}
