import { getDefaultEnvironment } from '@modelcontextprotocol/sdk/client/stdio.js';
import { TurnchartError } from '../../protocol/errors.js';
import { HOST_SECRET_VARIABLES, MIN_CONTAINED_SECRET, NEVER_NAMED } from '../sandbox/command-environment.js';
import { COMMAND_MARKER_VARIABLE } from '../sandbox/process-table.js';

/**
 * The environment a stdio MCP server is started with. Not the host's: a server is a third-party
 * program whose output goes to the model, so it gets the SDK's default few variables (HOME,
 * LOGNAME, PATH, SHELL, TERM, USER) and exactly what its config names — never the host's own
 * settings and credentials. The rules are run_command's (`command-environment.ts`):
 *
 * - a config that names `TURNCHART_*`, `DATABASE_URL` or the command marker, or gives a value that
 *   holds one of the host's secrets (its token, API key, database or AMQP URL), is refused with a
 *   typed error naming the server and the variable: a config asking for the host's secrets is a
 *   mistake to fix, not to paper over;
 * - a default variable whose value holds a secret is dropped.
 *
 * The server's processes also carry the command marker, so a host that dies without closing them
 * has them ended at the next start (`reapLeftoverCommands`), as run_command's are.
 */
export function serverEnvironment(
  server: string,
  named: Readonly<Record<string, string>>,
  options: { marker: string; secrets?: readonly (string | null | undefined)[]; hostEnv?: NodeJS.ProcessEnv },
): Record<string, string> {
  const holdsSecret = secretMatcher(options.hostEnv ?? process.env, options.secrets ?? []);
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(getDefaultEnvironment())) if (!holdsSecret(value)) env[name] = value;
  for (const [name, value] of Object.entries(named)) {
    if (NEVER_NAMED(name)) {
      throw new TurnchartError('InvalidMcpServers', `mcpServers.${server}.env: ${name} is never passed to an MCP server (the host's own settings and credentials stay in the host)`);
    }
    if (holdsSecret(value)) {
      throw new TurnchartError('InvalidMcpServers', `mcpServers.${server}.env: ${name} is never passed to an MCP server: its value holds one of the host's secrets`);
    }
    env[name] = value;
  }
  env[COMMAND_MARKER_VARIABLE] = options.marker;
  return env;
}

/** Checks a config's variables before anything starts (the same rules, without building the environment). */
export function checkServerEnvironment(server: string, named: Readonly<Record<string, string>>, secrets: readonly (string | null | undefined)[], hostEnv = process.env): void {
  serverEnvironment(server, named, { marker: 'check', secrets, hostEnv });
}

function secretMatcher(hostEnv: NodeJS.ProcessEnv, given: readonly (string | null | undefined)[]): (value: string) => boolean {
  const secrets = [...HOST_SECRET_VARIABLES.map((name) => hostEnv[name]), ...given].filter((value): value is string => !!value);
  return (value) => secrets.some((secret) => value === secret || (secret.length >= MIN_CONTAINED_SECRET && value.includes(secret)));
}
