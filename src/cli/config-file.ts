import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { basename, dirname, extname, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { messageOf } from '../protocol/error-message.js';
import { configFileSchema, type ConfigFile } from './config-schema.js';

/** The names looked for in the working directory, in this order, when neither `--config` nor `TURNCHART_CONFIG` names a file. */
const CONFIG_NAMES = ['turnchart.config.ts', 'turnchart.config.mts', 'turnchart.config.mjs', 'turnchart.config.js', 'turnchart.config.json'] as const;

/** A configuration file that cannot be read or is not valid: the file, the key path, and what is wrong. */
export class ConfigError extends Error {
  constructor(
    /** The file as the user named it (or its name in the working directory). */
    readonly file: string,
    /** Dotted key path (`agents.reviewer.model`); empty for the file as a whole. */
    readonly path: string,
    readonly problem: string,
  ) {
    super(`${file}: ${path ? `${path}: ` : ''}${problem}`);
    this.name = 'ConfigError';
  }
}

/** A configuration file read and checked for shape; what its names refer to is checked when it is resolved. */
export interface LoadedConfig {
  /** The file as named, for messages. */
  name: string;
  /** Its absolute path; paths in it are relative to its directory. */
  path: string;
  dir: string;
  /** Its text, to tell a secret written in it from one it reads from the environment. */
  text: string;
  config: ConfigFile;
}

/**
 * The file `--config FILE` (or `TURNCHART_CONFIG`) names, else the first of `CONFIG_NAMES` in
 * `cwd`, else null. A named file must exist; an empty variable counts as unset. Only `--config` is
 * read here: the command's own parse checks every other flag.
 */
export function configPathOf(args: string[], env: NodeJS.ProcessEnv, cwd: string = process.cwd()): { name: string; path: string } | null {
  const { values } = parseArgs({ args, options: { config: { type: 'string' } }, strict: false, allowPositionals: true });
  const named = typeof values.config === 'string' && values.config !== '' ? values.config : env.TURNCHART_CONFIG || undefined;
  if (named !== undefined) {
    const path = resolve(cwd, named);
    if (!existsSync(path)) throw new ConfigError(named, '', `no such file (named by ${typeof values.config === 'string' ? '--config' : 'TURNCHART_CONFIG'})`);
    return { name: named, path };
  }
  const found = CONFIG_NAMES.filter((name) => existsSync(resolve(cwd, name)));
  if (found.length > 1) throw new ConfigError(found[0]!, '', `more than one configuration file here (${found.join(', ')}): remove one, or name it with --config`);
  return found[0] ? { name: found[0], path: resolve(cwd, found[0]) } : null;
}

/**
 * Reads a configuration file: TypeScript through tsx (no build step, from the sources or the
 * installed package alike), JavaScript modules by `import()`, JSON by `JSON.parse`; then checks its
 * shape. A module's default export is the configuration.
 */
export async function loadConfigFile(name: string, path: string): Promise<LoadedConfig> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    throw new ConfigError(name, '', `cannot read it: ${messageOf(error)}`);
  }
  const raw = await exported(name, path, text);
  const parsed = configFileSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const keys = issue.code === 'unrecognized_keys' ? ` (${issue.keys.join(', ')})` : '';
    throw new ConfigError(name, issue.path.map(String).join('.'), `${issue.message}${keys}`);
  }
  return { name, path, dir: dirname(path), text, config: parsed.data };
}

async function exported(name: string, path: string, text: string): Promise<unknown> {
  const extension = extname(path);
  if (extension === '.json') {
    try {
      return JSON.parse(text) as unknown;
    } catch (error) {
      throw new ConfigError(name, '', `not valid JSON: ${messageOf(error)}`);
    }
  }
  let module: { default?: unknown };
  try {
    if (extension === '.ts' || extension === '.mts' || extension === '.cts') {
      // Loaded lazily: tsx registers a module hook, which a host without a TypeScript config never needs.
      const { tsImport } = await import('tsx/esm/api');
      module = (await tsImport(pathToFileURL(path).href, { parentURL: import.meta.url })) as { default?: unknown };
    } else if (extension === '.mjs' || extension === '.js' || extension === '.cjs') {
      module = (await import(pathToFileURL(path).href)) as { default?: unknown };
    } else {
      throw new ConfigError(name, '', `unknown kind of file '${extension || basename(path)}': expected .ts, .mts, .mjs, .js or .json`);
    }
  } catch (error) {
    if (error instanceof ConfigError) throw error;
    const message = messageOf(error).split('\n')[0]!;
    // The one import a config usually has: `defineConfig` only adds types, so the file works without it.
    const hint = /Cannot find (module|package) 'turnchart'/.test(message)
      ? " (install turnchart where the file is, `npm i turnchart`, or drop the import: `export default { … }` needs no defineConfig)"
      : '';
    throw new ConfigError(name, '', `cannot load it: ${message}${hint}`);
  }
  // A file outside an ES-module package is compiled as CommonJS: its default export arrives as
  // `default.default`. No configuration has a `default` key, so the nesting is unambiguous.
  const outer = module.default as { default?: unknown } | undefined;
  const value = typeof outer === 'object' && outer !== null && 'default' in outer ? outer.default : outer;
  if (value === undefined) throw new ConfigError(name, '', 'it has no default export (export default defineConfig({ … }))');
  return value;
}

/** Keys of the file that hold secrets. */
const SECRET_KEYS = ['token', 'jwtSecret', 'databaseUrl', 'amqpUrl'] as const;

/**
 * The secret keys whose value is written in the file as it is. A secret in the file is allowed, so
 * a file kept beside the host works, but it is said at start: a TypeScript or JavaScript file can
 * read it from `process.env` instead, and then its value is not in the text.
 */
export function secretsWrittenIn(loaded: LoadedConfig): string[] {
  return SECRET_KEYS.filter((key) => {
    const value = loaded.config[key];
    if (typeof value !== 'string' || !loaded.text.includes(value)) return false;
    // A URL is secret only for its password.
    return key === 'token' || key === 'jwtSecret' || /\/\/[^:/@]+:[^@]+@/.test(value);
  });
}
