import { z } from 'zod';
import { storable, STORABLE } from './storable.js';

/**
 * Who a request comes from (issue 25): the principal owns what it creates — sessions, their turns
 * and sub-agents, tasks, chats — and sees only that; an admin sees everything. The principal is the
 * verified token's `sub` (JWT), the embedder's `authenticate`, or the one principal of a host run
 * with a shared `--token` (or none, on loopback), which is an admin, since it is the whole host.
 */
export interface Caller {
  principal: string;
  roles: readonly string[];
}

/** The role that sees and controls every principal's sessions and tasks. */
export const ADMIN_ROLE = 'admin';

/** The principal of a host with a shared token, or none: the one user there is, an operator. */
export const OPERATOR: Caller = Object.freeze({ principal: 'operator', roles: Object.freeze([ADMIN_ROLE]) });

/** A principal as stored: a JWT `sub` may be any string, but an empty or unstorable one is refused. */
export const principalSchema = z.string().min(1).max(256).refine(storable, STORABLE);

export const callerSchema = z.object({ principal: principalSchema, roles: z.array(z.string().max(256)).max(64).readonly() });

export function isAdmin(caller: Caller): boolean {
  return caller.roles.includes(ADMIN_ROLE);
}

/**
 * Whether a principal's sessions and tasks work in a directory of their own beneath the workspace
 * (`users/<hash>`): anyone but an admin and the operator. `admin` is what the asker knows of it — a
 * host, the caller's roles; a stored session, its quota exemption; a worker, nothing (false).
 */
export function hasOwnDirectory(principal: string | null | undefined, admin: boolean): principal is string {
  return principal !== null && principal !== undefined && !admin && principal !== OPERATOR.principal;
}

/**
 * Whether the caller may see and act on what `owner` owns. Rows stored before principals existed
 * have no owner: only an admin sees them.
 */
export function mayAccess(caller: Caller, owner: string | null | undefined): boolean {
  return isAdmin(caller) || (owner !== null && owner !== undefined && owner === caller.principal);
}
