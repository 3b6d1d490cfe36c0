import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach } from 'vitest';
import {
  createRuntime,
  scriptedModel,
  sqliteStorage,
  withFaults,
  type RequestMessage,
  type RuntimeOptions,
  type ScriptedStep,
  type SessionStorage,
  type StoredMessage,
  type UpdateEnvelope,
  type WorldStateSection,
} from '../../src/index.js';
import { readFileTool, type Harness } from './harness.js';

/** Fresh real directories for one test file, removed after each test. */
export function useTempDirs(prefix = 'turnchart-rt-'): () => Promise<string> {
  const made: string[] = [];
  afterEach(async () => {
    await Promise.all(made.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
  });
  return async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), prefix));
    made.push(dir);
    return dir;
  };
}

/** Writes files under `root`; a key ending in `/` is an (empty) directory. */
export async function writeTree(root: string, files: Record<string, string>): Promise<void> {
  for (const [name, text] of Object.entries(files)) {
    const target = path.join(root, name);
    if (name.endsWith('/')) {
      await mkdir(target, { recursive: true });
    } else {
      await mkdir(path.dirname(target), { recursive: true });
      await writeFile(target, text);
    }
  }
}

/**
 * Like `harness`, but the session is created in `workspaceDir` (when given): a runtime on SQLite
 * :memory: wrapped in `withFaults`, a scripted model, the read tool, updates collected.
 */
export async function workspaceHarness(
  steps: ScriptedStep[],
  options: Partial<RuntimeOptions> & { workspaceDir?: string; permissionMode?: 'ask' | 'auto' | 'read_only' } = {},
): Promise<Harness> {
  const { workspaceDir, permissionMode, ...runtimeOptions } = options;
  const storage = withFaults(runtimeOptions.storage ?? sqliteStorage({ filename: ':memory:' }));
  const model = scriptedModel(steps);
  const runtime = await createRuntime({ model, tools: [readFileTool()], ...runtimeOptions, storage });
  const session = await runtime.createSession({ agent: 'default', permissionMode: permissionMode ?? 'ask', workspaceDir });
  const updates: UpdateEnvelope[] = [];
  session.updates$.subscribe((u) => updates.push(u));
  return { runtime, session, model, updates, storage };
}

/** The stored world-state messages, as `{ id, section, text }`, in sequence order. */
export function storedWorldState(messages: readonly StoredMessage[]): { id: string; section: WorldStateSection | undefined; text: string }[] {
  return messages.flatMap((m) =>
    m.message.role === 'user' && m.message.kind === 'world_state' ? [{ id: m.id, section: m.message.section, text: m.message.text }] : [],
  );
}

/** The texts of a request's user messages, in order. */
export function userTexts(messages: readonly RequestMessage[]): string[] {
  return messages.flatMap((m) => (m.role === 'user' ? [m.text] : []));
}

/** A storage whose `method` waits at a gate: `reached` resolves when it is called, `release` lets it through. */
export function holding<M extends keyof SessionStorage>(inner: SessionStorage, method: M) {
  let release: () => void = () => undefined;
  let markReached: () => void = () => undefined;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const reached = new Promise<void>((resolve) => (markReached = resolve));
  const storage = new Proxy(inner, {
    get(target, prop) {
      const value: unknown = Reflect.get(target, prop);
      if (typeof value !== 'function') return value;
      const bound = (value as (...args: unknown[]) => unknown).bind(target);
      if (prop !== method) return bound;
      return async (...args: unknown[]) => {
        markReached();
        await gate;
        return bound(...args);
      };
    },
  });
  return { storage, reached, release: () => release() };
}
