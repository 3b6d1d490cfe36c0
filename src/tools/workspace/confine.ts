import { lstat, readlink, realpath } from 'node:fs/promises';
import path from 'node:path';
import type { AuthorizationDecision } from '../../protocol/tool-result.js';
import { isMissing } from '../../util/errors.js';

/** A path the model gave, resolved to where it really is inside the workspace. */
export interface Confined {
  /** The real path: what the tool operates on. */
  real: string;
  /** The real root of the workspace. */
  root: string;
  /** `real` relative to `root` ('.' for the root), for messages the model reads. */
  relative: string;
}

export type Confinement = { ok: true; path: Confined } | { ok: false; reason: string };

/** Symlink hops followed through missing targets before giving up, as the kernel's ELOOP limit. */
const MAX_LINK_HOPS = 40;

/**
 * Where `input` really leads from `root`, and whether that stays inside the root's real path.
 *
 * `..` is applied to the name first (as `path.resolve` does), then every symlink on the way is
 * followed with `realpath`; a missing tail is resolved through its deepest existing ancestor, and
 * a dangling symlink through its target, so a write cannot create a file outside through either.
 * Tools then operate only on the real path, so reading `..` by name can narrow what is reachable
 * but never widen it.
 */
export async function confine(root: string, input: string, hidden: readonly string[] = []): Promise<Confinement> {
  if (input.includes('\0')) return { ok: false, reason: 'the path contains a NUL byte' };
  const realRoot = await realpath(root);
  const named = path.resolve(realRoot, input);
  if (!isInside(realRoot, named) && !isInside(root, named)) {
    return { ok: false, reason: `'${input}' is outside the workspace` };
  }
  let real: string;
  try {
    real = await realpathAllowingMissing(named, 0);
  } catch (error) {
    // A symlink loop or an unreadable directory on the way: nothing can be said about where it leads.
    return { ok: false, reason: `'${input}' cannot be resolved (${errorCode(error)})` };
  }
  if (!isInside(realRoot, real)) {
    return { ok: false, reason: `'${input}' leads outside the workspace through a symbolic link` };
  }
  // By name as well as by real path: `.turnchart/../.turnchart/x`, a link into it and a link out of it all stay refused.
  if (hidden.length > 0) {
    const places = await hiddenPlaces(hidden);
    if (isHidden(places, named) || isHidden(places, real)) return { ok: false, reason: hiddenReason(input) };
  }
  return { ok: true, path: { real, root: realRoot, relative: path.relative(realRoot, real) || '.' } };
}

/** The `authorize` hook of every path tool: rule-deny escapes and hidden paths, and leave the rest to the permission mode. */
export async function authorizePath(root: string, input: string, hidden: readonly string[] = []): Promise<AuthorizationDecision> {
  const confinement = await confine(root, input, hidden);
  return confinement.ok ? { decision: 'allow' } : { decision: 'deny', reason: confinement.reason };
}

/** Raised inside `execute` when a path that was allowed no longer is: the filesystem changed in between. */
export class EscapeError extends Error {
  constructor(reason: string) {
    super(`refused: ${reason}`);
    this.name = 'EscapeError';
  }
}

/** The re-check inside `execute`: throws `EscapeError` when the path escapes now. */
export async function mustConfine(root: string, input: string, hidden: readonly string[] = []): Promise<Confined> {
  const confinement = await confine(root, input, hidden);
  if (!confinement.ok) throw new EscapeError(confinement.reason);
  return confinement.path;
}

/** Is `target` the root or below it? Both must be absolute and normalized. */
export function isInside(root: string, target: string): boolean {
  const rel = path.relative(root, target);
  return rel === '' || (rel !== '..' && !rel.startsWith(`..${path.sep}`) && !path.isAbsolute(rel));
}

/**
 * Where the hidden paths (`workspaceTools({ hiddenPaths })`: the host's own database and the like)
 * are now: each as given and as its real path (through a missing tail, as `confine` resolves), so a
 * path is matched whichever way it was reached. Resolved on every call, not once: the database's
 * directory may be made after the tools are built.
 */
export async function hiddenPlaces(hidden: readonly string[]): Promise<string[]> {
  const places = new Set<string>();
  for (const given of hidden) {
    places.add(given);
    const real = await realpathAllowingMissing(given, 0).catch(() => null);
    if (real !== null) places.add(real);
  }
  return [...places];
}

/** Is `target` (absolute, normalized) one of `places` (from `hiddenPlaces`) or beneath one? */
export function isHidden(places: readonly string[], target: string): boolean {
  return places.some((place) => isInside(place, target));
}

/**
 * The refusal for a hidden path. A plain "not accessible", not a pretended "does not exist": the
 * writes into it must be refused anyway, and a read answered "missing" next to a write answered
 * "refused" (or one the model then tries to create) would only mislead. Where `.turnchart` is is
 * no secret; what is in it is.
 */
function hiddenReason(input: string): string {
  return `'${input}' is not accessible: it holds the host's own state, which the workspace tools do not reach`;
}

async function realpathAllowingMissing(target: string, hops: number): Promise<string> {
  try {
    return await realpath(target);
  } catch (error) {
    if (!isMissing(error)) throw error;
  }
  const parent = path.dirname(target);
  if (parent === target) return target;
  const entry = await lstat(target).catch(() => undefined);
  if (entry?.isSymbolicLink()) {
    // A dangling link: writing to it would create its target, so its target is what must be inside.
    if (hops >= MAX_LINK_HOPS) throw Object.assign(new Error(`too many symbolic links at '${target}'`), { code: 'ELOOP' });
    const linkTarget = path.resolve(await realpath(parent), await readlink(target));
    return realpathAllowingMissing(linkTarget, hops + 1);
  }
  return path.join(await realpathAllowingMissing(parent, hops), path.basename(target));
}

function errorCode(error: unknown): string {
  return (error as NodeJS.ErrnoException | null)?.code ?? String(error);
}
