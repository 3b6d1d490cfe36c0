import { execFile } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { chown, mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { messageOf } from '../../src/protocol/error-message.js';

/**
 * A PostgreSQL server of a test's own, to restart or stop without touching the shared one other
 * suites use at the same time: `initdb` into a temporary directory, `pg_ctl` on a free port, its
 * socket in that directory too. PostgreSQL refuses to run as root; as root the binaries run as the
 * `postgres` user (through `runuser`), which then owns the directory.
 */
export interface PrivatePostgres {
  url: string;
  /** `pg_ctl restart -m fast`: every connection is ended; returns once the server accepts new ones. */
  restart(): Promise<void>;
  stop(): Promise<void>;
  start(): Promise<void>;
  destroy(): Promise<void>;
}

const run = promisify(execFile);
const isRoot = process.getuid?.() === 0;

/** The newest installed server's bin directory, or null. */
function binDir(): string | null {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return null;
  const versions = readdirSync(root).filter((v) => existsSync(join(root, v, 'bin', 'initdb')) && existsSync(join(root, v, 'bin', 'pg_ctl')));
  versions.sort((a, b) => Number(b) - Number(a));
  return versions[0] ? join(root, versions[0], 'bin') : null;
}

/** Why no private server can be started here, or null when one can. */
export async function privatePostgresUnavailable(): Promise<string | null> {
  if (!binDir()) return 'no initdb and pg_ctl under /usr/lib/postgresql/*/bin';
  if (!isRoot) return null;
  try {
    await run('runuser', ['-u', 'postgres', '--', 'true']);
    return null;
  } catch (error) {
    return `running as root, and cannot run as the postgres user (${messageOf(error)})`;
  }
}

/** Runs a PostgreSQL binary, as `postgres` when this process is root. */
function pgBin(name: string, args: string[]) {
  const bin = join(binDir()!, name);
  return isRoot ? run('runuser', ['-u', 'postgres', '--', bin, ...args]) : run(bin, args);
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

async function ownedDirectory(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'turnchart-pg-'));
  if (isRoot) {
    const ids = async (flag: string) => Number((await run('id', [flag, 'postgres'])).stdout.trim());
    await chown(dir, await ids('-u'), await ids('-g'));
  }
  return dir;
}

export async function privatePostgres(): Promise<PrivatePostgres> {
  const dir = await ownedDirectory();
  const data = join(dir, 'data');
  await pgBin('initdb', ['-D', data, '-U', 'postgres', '-A', 'trust', '-E', 'UTF8', '--no-sync']);
  const port = await freePort();
  const ctl = (...args: string[]) => pgBin('pg_ctl', ['-D', data, '-w', '-t', '60', ...args]);
  // The server's output goes to a file: left on pg_ctl's stdout, it would hold the pipe open after pg_ctl exits.
  const log = join(dir, 'server.log');
  const start = () => ctl('-l', log, '-o', `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1`, 'start').then(() => undefined);
  await start();
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    restart: () => ctl('-l', log, '-m', 'fast', 'restart').then(() => undefined),
    stop: () => ctl('-m', 'fast', 'stop').then(() => undefined),
    start,
    destroy: async () => {
      await ctl('-m', 'immediate', 'stop').catch(() => undefined);
      await rm(dir, { recursive: true, force: true });
    },
  };
}
