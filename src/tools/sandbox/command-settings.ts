import { z } from 'zod';
import { TurnchartError } from '../../protocol/errors.js';
import type { CommandSandbox } from '../../protocol/sandbox.js';
import { commandEnvironment, environmentNameSchema } from './command-environment.js';
import { sandboxChoiceSchema, settleSandbox, type SandboxChoice } from './command-sandbox.js';
import type { Containment } from './containment.js';

/** How run_command's commands run, as `workspaceTools` takes it: what environment they get and what holds their processes. */
export interface CommandOptions {
  /** Variables passed to commands besides PATH, HOME, LANG, TERM, LC_* and a few more (see `commandEnvironment`). */
  commandEnv?: readonly string[];
  /** Values that must never reach a command under any name: the host's token, API keys, database and broker URLs. */
  hostSecrets?: readonly (string | null | undefined)[];
  /** Without a sandbox: `auto` (default) probes for a PID namespace; `process-group` forces the weaker fallback (and rules out a sandbox). */
  commandContainment?: 'auto' | 'process-group';
  /** `auto` (default): bubblewrap when it works, else none with a warning; `bwrap`: bubblewrap or a startup error; `off`: none. */
  sandbox?: SandboxChoice;
  /** Told, when the tools are built, what passed to commands looks like a credential, and that `auto` found no sandbox (default: console.warn). */
  warn?: (message: string) => void;
}

export interface CommandSettings {
  env: Record<string, string>;
  containment: Containment;
  sandbox: CommandSandbox;
}

const optionsSchema = z.strictObject({
  commandEnv: z.array(environmentNameSchema).max(200).optional(),
  hostSecrets: z.array(z.string().nullish()).max(100).optional(),
  commandContainment: z.enum(['auto', 'process-group']).default('auto'),
  sandbox: sandboxChoiceSchema.default('auto'),
});

/** Checks the options and settles the environment (from `hostEnv`, now), the sandbox and the containment (probed once per process). */
export function commandSettings(options: CommandOptions, hostEnv: NodeJS.ProcessEnv = process.env): CommandSettings {
  const { warn = (message: string) => console.warn(`turnchart: ${message}`), ...rest } = options;
  const parsed = optionsSchema.safeParse(rest);
  if (!parsed.success) throw new TurnchartError('InvalidWorkspaceOptions', z.prettifyError(parsed.error));
  const environment = commandEnvironment({ hostEnv, pass: parsed.data.commandEnv ?? [], secrets: parsed.data.hostSecrets ?? [] });
  const settled = settleSandbox(parsed.data.sandbox, parsed.data.commandContainment, hostEnv);
  environment.warnings.forEach(warn);
  if (settled.warning) warn(settled.warning);
  // The host's TMPDIR is out of a sandboxed command's reach (read-only, or under the /tmp it does not see): its own /tmp is.
  const env = settled.containment.kind === 'bwrap' && environment.env.TMPDIR !== undefined ? { ...environment.env, TMPDIR: '/tmp' } : environment.env;
  return { env, containment: settled.containment, sandbox: settled.sandbox };
}
