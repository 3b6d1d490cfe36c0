import { z } from 'zod';
import { TurnchartError } from '../../protocol/errors.js';
import { commandEnvironment, environmentNameSchema } from './command-environment.js';
import { commandContainment, type Containment } from './containment.js';

/** How run_command's commands run, as `workspaceTools` takes it: what environment they get and what holds their processes. */
export interface CommandOptions {
  /** Variables passed to commands besides PATH, HOME, LANG, TERM, LC_* and a few more (see `commandEnvironment`). */
  commandEnv?: readonly string[];
  /** Values that must never reach a command under any name: the host's token, API keys, database and broker URLs. */
  hostSecrets?: readonly (string | null | undefined)[];
  /** `auto` (default) probes for a PID namespace; `process-group` forces the weaker fallback. */
  commandContainment?: 'auto' | 'process-group';
  /** Told, when the tools are built, what passed to commands looks like a credential (default: console.warn). */
  warn?: (message: string) => void;
}

export interface CommandSettings {
  env: Record<string, string>;
  containment: Containment;
}

const optionsSchema = z.strictObject({
  commandEnv: z.array(environmentNameSchema).max(200).optional(),
  hostSecrets: z.array(z.string().nullish()).max(100).optional(),
  commandContainment: z.enum(['auto', 'process-group']).default('auto'),
});

/** Checks the options and settles the environment (from `hostEnv`, now) and the containment (probed once per process). */
export function commandSettings(options: CommandOptions, hostEnv: NodeJS.ProcessEnv = process.env): CommandSettings {
  const { warn, ...rest } = options;
  const parsed = optionsSchema.safeParse(rest);
  if (!parsed.success) throw new TurnchartError('InvalidWorkspaceOptions', z.prettifyError(parsed.error));
  const environment = commandEnvironment({ hostEnv, pass: parsed.data.commandEnv ?? [], secrets: parsed.data.hostSecrets ?? [] });
  environment.warnings.forEach(warn ?? ((message) => console.warn(`turnchart: ${message}`)));
  return { env: environment.env, containment: commandContainment(parsed.data.commandContainment) };
}
