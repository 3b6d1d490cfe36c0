import { z } from 'zod';
import { TurnchartError } from '../../protocol/errors.js';
import { COMMAND_MARKER_VARIABLE } from './process-table.js';

/**
 * The environment a command gets. Not the host's: whatever a command prints goes to the model, and
 * from there to storage, `/messages`, `/context` and the inspector, so the host's own credentials
 * must never be in it. A command gets a few variables programs expect, plus what the operator
 * names (`--command-env`, `workspaceTools({ commandEnv })`), under these rules:
 *
 * - never, even when named (a startup error): `TURNCHART_*` (the host's settings, its token and
 *   API key among them), `DATABASE_URL`, the command marker, and any variable whose value holds one
 *   of the host's secrets (its token, API key, database URL, AMQP URL — from its environment and
 *   from the `secrets` it is given, flags included);
 * - passed when named, with a warning at start: a name that looks like a credential (`*_API_KEY`,
 *   `*TOKEN*`, `*SECRET*`, `*PASSWORD*`, …) or a value that does (an `amqp://` URL, a URL with a
 *   password). Naming `GITHUB_TOKEN` is a decision to let the model use it; it is said out loud.
 */

/** Variables programs expect, passed when the host has them (`LC_*` too). */
const BASELINE = ['PATH', 'HOME', 'LANG', 'LANGUAGE', 'TERM', 'TZ', 'TMPDIR', 'USER', 'LOGNAME'];
const LOCALE = /^LC_[A-Z_]+$/;

/** The host's own secrets in its environment: their values never reach a command (nor an MCP server) under any name. */
export const HOST_SECRET_VARIABLES = ['TURNCHART_API_KEY', 'TURNCHART_TOKEN', 'TURNCHART_AMQP_URL', 'DATABASE_URL'];

/** Names never passed to a command or an MCP server, even when named: the host's settings and credentials, the command marker. */
export const NEVER_NAMED = (name: string) => /^TURNCHART_/i.test(name) || /^DATABASE_URL$/i.test(name) || name === COMMAND_MARKER_VARIABLE;
const CREDENTIAL_NAME = /API_?KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|PRIVATE_KEY/i;
const CREDENTIAL_VALUE = /^amqps?:\/\/|:\/\/[^/@\s:]*:[^/@\s]+@/i;

/** A secret shorter than this is matched whole; a longer one also inside a value (`Bearer <token>`). */
export const MIN_CONTAINED_SECRET = 8;

/** Used when the host itself has no PATH: commands would otherwise find nothing. */
const DEFAULT_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

export const environmentNameSchema = z
  .string()
  .max(200)
  .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'an environment variable name (letters, digits, _)');

/** `--command-env` values: each repeatable and comma-separated (`A,B --command-env C`). */
export const commandEnvFlagSchema = z
  .union([z.string(), z.array(z.string())])
  .transform((value) => (Array.isArray(value) ? value : [value]).flatMap((part) => part.split(',')).map((name) => name.trim()).filter(Boolean))
  .pipe(z.array(environmentNameSchema).max(200));

export interface CommandEnvironmentOptions {
  /** The host's environment (`process.env`), read once, when the tools are built. */
  hostEnv: NodeJS.ProcessEnv;
  /** Names to pass besides the baseline. */
  pass?: readonly string[];
  /** Values that must never reach a command (the host's token, API key, database and broker URLs). */
  secrets?: readonly (string | null | undefined)[];
}

export interface CommandEnvironment {
  env: Record<string, string>;
  /** One line each, for the host to print at start. */
  warnings: string[];
}

/** Builds a command's environment; a name that may never be passed is a startup error (`InvalidWorkspaceOptions`). */
export function commandEnvironment(options: CommandEnvironmentOptions): CommandEnvironment {
  const { hostEnv } = options;
  const pass = z.array(environmentNameSchema).safeParse(options.pass ?? []);
  if (!pass.success) throw new TurnchartError('InvalidWorkspaceOptions', `commandEnv: ${z.prettifyError(pass.error)}`);
  const secrets = [...HOST_SECRET_VARIABLES.map((name) => hostEnv[name]), ...(options.secrets ?? [])].filter((value): value is string => !!value);
  const holdsSecret = (value: string) => secrets.some((secret) => value === secret || (secret.length >= MIN_CONTAINED_SECRET && value.includes(secret)));

  const env: Record<string, string> = {};
  const warnings: string[] = [];
  for (const name of Object.keys(hostEnv)) {
    const value = hostEnv[name];
    if (value === undefined || !(BASELINE.includes(name) || LOCALE.test(name))) continue;
    if (holdsSecret(value)) warnings.push(`${name} is not passed to commands: its value holds one of the host's secrets`);
    else env[name] = value;
  }
  env.PATH ??= DEFAULT_PATH;

  for (const name of new Set(pass.data)) {
    if (NEVER_NAMED(name)) {
      throw new TurnchartError('InvalidWorkspaceOptions', `commandEnv: ${name} is never passed to commands (the host's own settings and credentials stay in the host)`);
    }
    const value = hostEnv[name];
    if (value === undefined) {
      warnings.push(`commandEnv: ${name} is not set in the host's environment; commands will not have it`);
      continue;
    }
    if (holdsSecret(value)) {
      throw new TurnchartError('InvalidWorkspaceOptions', `commandEnv: ${name} is never passed to commands: its value holds one of the host's secrets`);
    }
    if (CREDENTIAL_NAME.test(name) || CREDENTIAL_VALUE.test(value)) {
      warnings.push(`commandEnv: passing ${name} to commands; it looks like a credential, and the model can read whatever a command can`);
    }
    env[name] = value;
  }
  return { env, warnings };
}
