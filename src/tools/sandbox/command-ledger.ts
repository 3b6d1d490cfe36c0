import { lstat, mkdir, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { z } from 'zod';
import { isRunning, killMarked, signalGroup, startTimeOf } from './process-table.js';

/**
 * The commands running on this machine, one small file each, so that a host that died without
 * ending them (SIGKILL, a crash) has them ended at the next start of any host of the same user
 * (`reapLeftoverCommands`), before restart correction reports their turns `interrupted`. In a PID
 * namespace they died with the host already; in the process-group fallback this is what ends them.
 *
 * The directory is per user (`<tmpdir>/turnchart-commands-<uid>`, mode 0700) and must be owned by
 * this user and writable by nobody else: its entries name processes to kill, and an entry planted
 * by someone else must not make a host kill what it chose. The commands themselves run as this user
 * and could write an entry too (outside the bwrap sandbox, whose /tmp is its own), so a reap kills
 * only what an entry names exactly: a process group whose leader has the recorded pid and start
 * time, and processes carrying the entry's marker — nothing a command in a PID namespace can see to
 * name. A bwrap command's recorded group is bwrap's alone: killing it kills the sandbox.
 */

const ENTRY_SUFFIX = '.json';
const TEMP_SUFFIX = '.tmp';
/** Entries looked at in one reap: a ledger flooded with forged entries cannot stall a start. */
const MAX_EXAMINED = 2_000;
/** Larger than any entry this code writes. */
const MAX_ENTRY_BYTES = 10_000;
/** A temporary file older than this was left by a host that died while writing it. */
const STALE_TEMP_MS = 60_000;

const positiveInt = z.number().int().positive();
const startTime = z.string().regex(/^\d{1,30}$/).nullable();

const entrySchema = z.strictObject({
  version: z.literal(1),
  /** The value of the command's marker variable. */
  marker: z.string().regex(/^[A-Za-z0-9-]{8,100}$/),
  /** The host that ran it, as pid and start time: a pid alone may belong to another process by now. */
  owner: z.strictObject({ pid: positiveInt, startTime }),
  /** The process spawned (the leader of the command's process group); null until it is spawned. */
  pid: positiveInt.nullable(),
  pidStartTime: startTime,
  containment: z.enum(['bwrap', 'pid-namespace', 'process-group']),
  startedAtMs: z.number().int().nonnegative(),
});

export type LedgerEntry = z.output<typeof entrySchema>;

/** The ledger of this user on this machine. */
function defaultLedgerDir(): string {
  return path.join(os.tmpdir(), `turnchart-commands-${process.getuid?.() ?? 'user'}`);
}

let ownStartTime: Promise<string | null> | null = null;
const ownerStartTime = () => (ownStartTime ??= startTimeOf(process.pid));

/** One running command's entry: written before it is spawned, completed with its pid, removed when it has ended. */
export interface LedgerRecord {
  started(pid: number): void;
  /** Resolves once the entry is gone (or could not be removed). */
  close(): Promise<void>;
}

const UNRECORDED: LedgerRecord = { started: () => undefined, close: async () => undefined };

/**
 * Records a command about to start. Never fails the command: a ledger that cannot be written
 * (a foreign directory, a full disk) leaves the command unrecorded — `reapLeftoverCommands` says
 * so at start — and a PID namespace still ends it with the host.
 */
export async function recordCommand(marker: string, containment: LedgerEntry['containment'], dir = defaultLedgerDir()): Promise<LedgerRecord> {
  if (!(await usableDir(dir))) return UNRECORDED;
  const file = path.join(dir, `${marker}${ENTRY_SUFFIX}`);
  let entry: LedgerEntry = {
    version: 1,
    marker,
    owner: { pid: process.pid, startTime: await ownerStartTime() },
    pid: null,
    pidStartTime: null,
    containment,
    startedAtMs: Date.now(),
  };
  // Written before the command starts: there is no moment it runs unrecorded.
  try {
    await writeEntry(file, entry);
  } catch {
    return UNRECORDED;
  }
  // Later writes and the removal run one after another, so a late write never brings back a removed entry.
  let queue: Promise<unknown> = Promise.resolve();
  return {
    started(pid) {
      queue = queue.then(async () => {
        entry = { ...entry, pid, pidStartTime: await startTimeOf(pid) };
        await writeEntry(file, entry);
      }).catch(() => undefined);
    },
    close() {
      queue = queue.then(() => rm(file, { force: true })).catch(() => undefined);
      return queue.then(() => undefined);
    },
  };
}

export interface ReapReport {
  /** Entries whose owner was gone, ended and removed. */
  reaped: number;
  /** Processes signalled for them. */
  killed: number;
}

/**
 * Ends the commands recorded by hosts that are gone (their pid dead, or alive with another start
 * time: reused) and removes their entries. Entries of live hosts, this one included, are left
 * alone. Call it when a host starts, before `createRuntime` reports what the dead host was running
 * as `interrupted`. Never throws; problems go to `warn`.
 */
export async function reapLeftoverCommands(options: { dir?: string; warn?: (message: string) => void } = {}): Promise<ReapReport> {
  const dir = options.dir ?? defaultLedgerDir();
  const warn = options.warn ?? (() => undefined);
  const report: ReapReport = { reaped: 0, killed: 0 };
  if (!(await usableDir(dir, warn))) return report;
  let names: string[];
  try {
    names = await readdir(dir);
  } catch (error) {
    warn(`cannot read the command ledger ${dir}: ${(error as Error).message}`);
    return report;
  }
  const gone: { file: string; entry: LedgerEntry }[] = [];
  let examined = 0;
  for (const name of names) {
    const file = path.join(dir, name);
    if (name.endsWith(TEMP_SUFFIX)) {
      if (await tempAbandoned(file, name)) await rm(file, { force: true }).catch(() => undefined);
      continue;
    }
    if (!name.endsWith(ENTRY_SUFFIX)) continue;
    if (++examined > MAX_EXAMINED) {
      warn(`the command ledger ${dir} holds more than ${MAX_EXAMINED} entries; the rest are left for the next start`);
      break;
    }
    const entry = await readEntry(file);
    if (!entry) {
      warn(`removed an unreadable command ledger entry ${file}`);
      await rm(file, { force: true }).catch(() => undefined);
      continue;
    }
    if (!(await ownerAlive(entry.owner))) gone.push({ file, entry });
  }
  for (const { entry } of gone) if (await killRecordedGroup(entry)) report.killed += 1;
  report.killed += await killMarked(gone.map(({ entry }) => entry.marker));
  for (const { file } of gone) await rm(file, { force: true }).catch(() => undefined);
  report.reaped = gone.length;
  if (report.killed > 0) warn(`ended ${report.killed} process(es) of ${report.reaped} command(s) left running by a host that is gone`);
  return report;
}

/**
 * A temporary file is left when its writer died between writing and renaming it (a host SIGKILLed
 * while recording a command's pid). Its name carries the writer's pid: a dead writer's is removed
 * at once; a live pid's only once old, since that pid may be reused and the file abandoned all the same.
 */
async function tempAbandoned(file: string, name: string): Promise<boolean> {
  const writer = Number(/\.(\d{1,10})\.tmp$/.exec(name)?.[1]);
  if (Number.isSafeInteger(writer) && writer > 0 && writer !== process.pid && !(await isRunning(writer))) return true;
  const info = await stat(file).catch(() => null);
  return info !== null && Date.now() - info.mtimeMs > STALE_TEMP_MS;
}

async function ownerAlive(owner: LedgerEntry['owner']): Promise<boolean> {
  if (!(await isRunning(owner.pid))) return false;
  // Without a recorded start time (no /proc where it ran) a live pid is taken to be the owner.
  return owner.startTime === null || (await startTimeOf(owner.pid)) === owner.startTime;
}

/**
 * Kills the recorded process group only when its leader is alive with the recorded start time:
 * surely the command's. The ledger is writable by the commands themselves (they run as this user),
 * so an entry may be forged, and a forged one must not kill what it names blindly; a group whose
 * leader is gone is left to the marker, which its members carry.
 */
async function killRecordedGroup(entry: LedgerEntry): Promise<boolean> {
  if (entry.pid === null || entry.pidStartTime === null) return false;
  return (await startTimeOf(entry.pid)) === entry.pidStartTime && signalGroup(entry.pid, 'SIGKILL');
}

async function readEntry(file: string): Promise<LedgerEntry | null> {
  try {
    if ((await stat(file)).size > MAX_ENTRY_BYTES) return null;
    const text = await readFile(file, 'utf8');
    const parsed = entrySchema.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}

/** Written whole or not at all: a reader never sees half an entry. */
async function writeEntry(file: string, entry: LedgerEntry): Promise<void> {
  const temp = `${file}.${process.pid}${TEMP_SUFFIX}`;
  await writeFile(temp, JSON.stringify(entry), { mode: 0o600 });
  await rename(temp, file);
}

/** Creates the directory if need be; true when it is this user's and closed to others. */
async function usableDir(dir: string, warn?: (message: string) => void): Promise<boolean> {
  try {
    await mkdir(dir, { mode: 0o700 });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') {
      warn?.(`cannot create the command ledger ${dir}: ${(error as Error).message}`);
      return false;
    }
  }
  try {
    const info = await lstat(dir);
    const uid = process.getuid?.();
    if (!info.isDirectory() || (uid !== undefined && info.uid !== uid) || (info.mode & 0o022) !== 0) {
      warn?.(`not using the command ledger ${dir}: it is not a directory of this user closed to others; commands left by a dead host are not ended`);
      return false;
    }
    return true;
  } catch (error) {
    warn?.(`cannot use the command ledger ${dir}: ${(error as Error).message}`);
    return false;
  }
}
