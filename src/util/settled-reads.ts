import type { BigIntStats } from 'node:fs';

/**
 * A file system entry's metadata changes with every change to it (a directory's with every entry
 * added, removed or renamed); its change time cannot be set back (`utimes` moves it too). But a file
 * system stamps times at a coarse granularity (a jiffy on ext4, 2 s on FAT), so a change made just
 * after a read can carry the stamp the read saw. A read is reused only when its entry's change time
 * was this much older than the moment its metadata was taken: any later change then moves a stamp.
 */
export const SETTLE_MS = 2_000;

/** What a read gave, with the metadata of the entry it was read from. */
interface Kept<T> {
  ino: bigint;
  dev: bigint;
  size: bigint;
  mtimeNs: bigint;
  ctimeNs: bigint;
  value: T;
}

/**
 * Reads of files and directories reused while their entry's metadata shows it unchanged: the world
 * state's sources and the skill catalog (CW-2), sampled before every model call. A read through the
 * thread pool costs some 50–70 µs of CPU per operation (the hand-off, the wake-up, an error object
 * for a missing file), where the `lstat` that proves the entry unchanged costs 2 on the main thread.
 * Bounded: past `capacity` entries the oldest read is forgotten.
 */
export class SettledReads<T> {
  private readonly kept = new Map<string, Kept<T>>();

  constructor(private readonly capacity = 256) {}

  /**
   * `path`'s value: the kept one while `info` (its metadata, taken at `seenAtMs` or later) matches the
   * entry's when it was read and that read was settled; else `load()`'s, kept when `info` is settled
   * and `keep` accepts it (a value that says a read failed for a passing reason is read again).
   */
  async read(path: string, info: BigIntStats, seenAtMs: number, load: () => Promise<T>, keep: (value: T) => boolean = () => true): Promise<T> {
    const kept = this.kept.get(path);
    if (kept !== undefined && sameEntry(kept, info)) return kept.value;
    const value = await load();
    this.kept.delete(path);
    if (Number(info.ctimeMs) < seenAtMs - SETTLE_MS && keep(value)) {
      if (this.kept.size >= this.capacity) this.kept.delete(this.kept.keys().next().value as string);
      this.kept.set(path, { ino: info.ino, dev: info.dev, size: info.size, mtimeNs: info.mtimeNs, ctimeNs: info.ctimeNs, value });
    }
    return value;
  }
}

function sameEntry(kept: Kept<unknown>, info: BigIntStats): boolean {
  return kept.ino === info.ino && kept.dev === info.dev && kept.size === info.size && kept.mtimeNs === info.mtimeNs && kept.ctimeNs === info.ctimeNs;
}
