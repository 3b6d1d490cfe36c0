import type { SessionStorage } from './session-storage.js';

export type StorageMethod = keyof SessionStorage;
type Args<M extends StorageMethod> = Parameters<SessionStorage[M]>;

/** What an injected fault rejects with, unless the test supplied its own error. */
export class StorageFaultError extends Error {
  constructor(readonly method: StorageMethod) {
    super(`injected storage fault in ${method}`);
    this.name = 'StorageFaultError';
  }
}

interface StorageCall {
  method: StorageMethod;
  args: unknown[];
  /** True when a fault was injected, i.e. the inner storage never saw the call. */
  failed: boolean;
}

export interface FaultyStorage extends SessionStorage {
  /** The next `times` calls of `method` fail. */
  failNext(method: StorageMethod, times?: number, error?: Error): void;
  failAlways(method: StorageMethod, error?: Error): void;
  failWhen<M extends StorageMethod>(method: M, predicate: (...args: Args<M>) => boolean, error?: Error): void;
  /** Removes every fault of `method`, or of all methods. Recorded calls are kept. */
  heal(method?: StorageMethod): void;
  /** Every call in order, failed or not, so tests can assert write order. */
  readonly calls: StorageCall[];
}

// Listing the names is what lets the decorator be generic; the check below fails to
// compile when SessionStorage gains a method that is missing here.
export const STORAGE_METHODS = [
  'migrate',
  'ping',
  'createSession',
  'getSession',
  'listSessions',
  'setPermissionMode',
  'listChildSessions',
  'switchAgent',
  'acquireSession',
  'renewLeases',
  'releaseSession',
  'liveOwnersOn',
  'leaseHolder',
  'sessionStanding',
  'heldSessionCount',
  'turnActivity',
  'addPrincipalTokens',
  'principalTokens',
  'claimStreamSlot',
  'releaseStreamSlot',
  'renewStreamSlots',
  'releaseStreamSlots',
  'expireOwner',
  'unheldSessionsWithWork',
  'requestApproval',
  'answerApproval',
  'listApprovals',
  'requestCancel',
  'startApprovedCall',
  'reserveUpdateSequence',
  'beginTurn',
  'enqueueTurn',
  'cancelQueuedTurn',
  'listQueuedTurns',
  'endTurn',
  'getTurn',
  'listTurns',
  'getRun',
  'listRuns',
  'appendMessage',
  'listMessages',
  'listAudit',
  'savePlan',
  'latestPlan',
  'writeSpans',
  'listSpans',
  'saveCompaction',
  'listCompactions',
  'activeCompaction',
  'rewindTo',
  'correctInterrupted',
  'close',
] as const satisfies readonly StorageMethod[];
const _allMethodsListed: Exclude<StorageMethod, (typeof STORAGE_METHODS)[number]> extends never ? true : never = true;

interface Faults {
  next: number;
  nextError?: Error;
  always: boolean;
  alwaysError?: Error;
  predicates: Array<{ test: (...args: unknown[]) => boolean; error?: Error }>;
}

const noFaults = (): Faults => ({ next: 0, always: false, predicates: [] });

export function withFaults(inner: SessionStorage): FaultyStorage {
  const faults = new Map<StorageMethod, Faults>(STORAGE_METHODS.map((m) => [m, noFaults()]));
  const calls: StorageCall[] = [];
  const faultsOf = (method: StorageMethod): Faults => faults.get(method) ?? noFaults();

  /** The error to reject with, or undefined to let the call through. Consumes a failNext charge. */
  const injected = (method: StorageMethod, args: unknown[]): Error | undefined => {
    const f = faultsOf(method);
    const matched = f.predicates.find((p) => p.test(...args));
    if (matched) return matched.error ?? new StorageFaultError(method);
    if (f.always) return f.alwaysError ?? new StorageFaultError(method);
    if (f.next > 0) {
      f.next -= 1;
      return f.nextError ?? new StorageFaultError(method);
    }
    return undefined;
  };

  const faulty = {
    calls,
    failNext(method: StorageMethod, times = 1, error?: Error) {
      faults.set(method, { ...faultsOf(method), next: times, nextError: error });
    },
    failAlways(method: StorageMethod, error?: Error) {
      faults.set(method, { ...faultsOf(method), always: true, alwaysError: error });
    },
    failWhen<M extends StorageMethod>(method: M, predicate: (...args: Args<M>) => boolean, error?: Error) {
      const test = predicate as (...args: unknown[]) => boolean;
      faultsOf(method).predicates.push({ test, error });
    },
    heal(method?: StorageMethod) {
      for (const m of method ? [method] : STORAGE_METHODS) faults.set(m, noFaults());
    },
  } as FaultyStorage;

  for (const method of STORAGE_METHODS) {
    const call = inner[method] as (...args: unknown[]) => Promise<unknown>;
    Object.defineProperty(faulty, method, {
      enumerable: true,
      value: async (...args: unknown[]) => {
        const error = injected(method, args);
        calls.push({ method, args, failed: error !== undefined });
        if (error) throw error;
        return call.apply(inner, args);
      },
    });
  }
  return faulty;
}
