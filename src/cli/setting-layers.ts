import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import type { z } from 'zod';
import type { LoadedConfig } from './config-file.js';
import { PATH_KEYS, type SettingKey } from './config-schema.js';

/** A command's flag: the variable that also sets it (none for a flag of the command line only), and whether it repeats. */
export interface FlagSpec {
  env?: string | undefined;
  multiple?: boolean;
  /** A switch: given on the command line without a value (`--otel`), it reads as `on`; its variable and file key say `on`/`off`. */
  switch?: boolean;
}

/** Flags the configuration file never sets: the one that names it. */
const NOT_IN_FILE = new Set(['config']);

/** `idle-ttl` → `idleTtl`. */
export function keyOfFlag(flag: string): string {
  return flag.replace(/-([a-z])/g, (_, letter: string) => letter.toUpperCase());
}

export interface Layered {
  /** Each flag's value as a string, from the first layer that sets it; undefined when none does. */
  values: Record<string, string | undefined>;
  positionals: string[];
  /** Where a flag's value came from, for an error message: `--idle-ttl (TURNCHART_IDLE_TTL)` or `turnchart.config.ts: idleTtl`. */
  sourceOf(flag: string): string;
  /** Which layer set a flag, or null when none did. */
  origin(flag: string): 'flag' | 'env' | 'file' | null;
}

/**
 * Every flag from the first of: the command line, its environment variable (an empty one counts as
 * unset), the configuration file; a repeatable flag's values joined with commas, as the variable
 * lists them. The defaults are the flag schemas', so they come last.
 */
export function layeredValues(args: string[], env: NodeJS.ProcessEnv, flags: Record<string, FlagSpec>, file: LoadedConfig | null, allowPositionals = false): Layered {
  const options = Object.fromEntries(
    Object.keys(flags).map((name) => [name, { type: flags[name]!.switch === true ? ('boolean' as const) : ('string' as const), multiple: flags[name]!.multiple === true }]),
  );
  const parsed = parseArgs({ args, options, strict: true, allowPositionals });
  const values: Record<string, string | undefined> = {};
  const origins = new Map<string, 'flag' | 'env' | 'file'>();
  for (const [name, spec] of Object.entries(flags)) {
    const given = parsed.values[name] as string | string[] | boolean | undefined;
    const flag = given === true ? 'on' : Array.isArray(given) ? given.join(',') : given === false ? undefined : given;
    const variable = spec.env !== undefined && env[spec.env] !== '' ? env[spec.env] : undefined;
    const inFile = file && !NOT_IN_FILE.has(name) ? fileValue(file, keyOfFlag(name)) : undefined;
    values[name] = flag ?? variable ?? inFile;
    const origin = flag !== undefined ? 'flag' : variable !== undefined ? 'env' : inFile !== undefined ? 'file' : null;
    if (origin) origins.set(name, origin);
  }
  const sourceOf = (flag: string): string => {
    if (file && origins.get(flag) === 'file') return `${file.name}: ${keyOfFlag(flag)}`;
    const spec = Object.hasOwn(flags, flag) ? flags[flag] : undefined;
    if (!spec) return flag;
    return spec.env ? `--${flag} (${spec.env})` : `--${flag}`;
  };
  return { values, positionals: parsed.positionals, sourceOf, origin: (flag) => origins.get(flag) ?? null };
}

/** A file key's value as its flag would give it: numbers as text, lists joined, paths from the file's directory. */
function fileValue(file: LoadedConfig, key: string): string | undefined {
  const value = (file.config as Record<string, unknown>)[key];
  if (value === undefined) return undefined;
  if (Array.isArray(value)) return value.join(',');
  if ((PATH_KEYS as readonly string[]).includes(key as SettingKey)) return resolve(file.dir, String(value));
  return String(value);
}

/** A failed parse of the merged settings, one line per issue, each naming where its value came from. */
export function settingsProblem(error: z.ZodError, sourceOf: (flag: string) => string): string {
  return error.issues.map((issue) => `${sourceOf(String(issue.path[0]))}: ${issue.message}`).join('\n');
}
