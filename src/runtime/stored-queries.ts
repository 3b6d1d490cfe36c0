/**
 * Reads that pass straight through to storage: the session need not be open, and nothing here
 * touches the registry of open sessions, so they live apart from it.
 */
import { z } from 'zod';
import type { AgentLink, SessionStorage } from '../../storage/session-storage.js';
import { auditPageSchema, sessionIdSchema } from '../protocol/commands.js';
import { persistenceError, TurnchartError } from '../protocol/errors.js';
import type { AuditLog, AuditPage } from '../protocol/audit.js';

/** A session's sub-agent links, as `Runtime.agentLinks` answers them. */
export interface AgentLinks {
  parent: AgentLink | null;
  children: { sessionId: string; agent: string; link: AgentLink }[];
}

/** RL-4: the session's tool dispatch audit, newest first; `before` is the previous page's `nextBefore`. */
export async function auditLog(storage: SessionStorage, sessionId: string, page: AuditPage): Promise<AuditLog> {
  const id = sessionIdOf(sessionId);
  const query = auditPageSchema.safeParse(page);
  if (!query.success) throw new TurnchartError('InvalidInput', z.prettifyError(query.error));
  const { limit, before } = query.data;
  const [row, entries] = await Promise.all([storage.getSession(id), storage.listAudit(id, { limit, ...(before !== undefined && { before }) })]).catch(
    (error: unknown) => {
      throw persistenceError(error);
    },
  );
  if (!row) throw new TurnchartError('UnknownSession', `no session '${id}'`);
  return { entries, nextBefore: entries.length === limit ? entries.at(-1)!.sequence : null };
}

/** The session that started this one, and the sessions this one started (oldest first). */
export async function agentLinks(storage: SessionStorage, sessionId: string): Promise<AgentLinks> {
  const id = sessionIdOf(sessionId);
  const [row, children] = await Promise.all([storage.getSession(id), storage.listChildSessions(id)]).catch((error: unknown) => {
    throw persistenceError(error);
  });
  if (!row) throw new TurnchartError('UnknownSession', `no session '${id}'`);
  return {
    parent: row.parent ?? null,
    children: children.map((child) => ({ sessionId: child.id, agent: child.agent, link: child.parent! })),
  };
}

export async function sessionExists(storage: SessionStorage, id: string): Promise<boolean> {
  try {
    return (await storage.getSession(id)) !== undefined;
  } catch (error) {
    throw persistenceError(error);
  }
}

function sessionIdOf(sessionId: string): string {
  const id = sessionIdSchema.safeParse(sessionId);
  if (!id.success) throw new TurnchartError('InvalidInput', z.prettifyError(id.error));
  return id.data;
}
