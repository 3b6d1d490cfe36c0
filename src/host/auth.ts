import { createHash, timingSafeEqual } from 'node:crypto';
import type { Context, MiddlewareHandler } from 'hono';
import { callerSchema, OPERATOR, type Caller } from '../protocol/principal.js';
import { commandError } from './errors.js';
import type { JwtVerifier } from './jwt-verifier.js';

/**
 * An embedder's own scheme (session cookies, an API gateway's header): the request's caller, or
 * null when it has none. Only what it answers is trusted; what it throws is the host's defect (500).
 */
export type Authenticate = (request: Request) => Caller | null | Promise<Caller | null>;

/** How the host tells who a request comes from (issue 25). */
export interface Authentication {
  /** Whether any credential is asked for; a host without one (loopback only) is its one operator's. */
  required: boolean;
  /** The request's caller, or null: refused with 401. */
  callerOf(request: Request): Promise<Caller | null>;
  /** Whether the request carries the host's shared token (`/healthz` says more to its holder). */
  holdsSharedToken(authorization: string | undefined): boolean;
}

export interface AuthenticationOptions {
  /** The shared secret of `--token`: its holder is the operator (an admin). */
  token: string | null;
  /** Signed identities (`--jwt-secret`, `--jwks-url`): `sub` is the principal. */
  jwt: JwtVerifier | null;
  /** The embedder's scheme, tried after the shared token and before JWTs. */
  authenticate: Authenticate | null;
}

export function authentication({ token, jwt, authenticate }: AuthenticationOptions): Authentication {
  const shared = sharedToken(token);
  const required = token !== null || jwt !== null || authenticate !== null;
  return {
    required,
    holdsSharedToken: shared,
    async callerOf(request) {
      if (!required) return OPERATOR;
      const authorization = request.headers.get('authorization') ?? undefined;
      if (shared(authorization)) return OPERATOR;
      if (authenticate) {
        const caller = await authenticate(request);
        if (caller !== null && caller !== undefined) return checkedCaller(caller);
      }
      const bearer = bearerOf(authorization);
      return jwt && bearer ? jwt.verify(bearer) : null;
    },
  };
}

/** The caller the middleware found for this request. */
export function callerOf(c: Context): Caller {
  const caller = c.get('caller' as never) as Caller | undefined;
  // Every route runs behind `requireCaller`; a route reached without one is a wiring defect, refused rather than served as anyone.
  if (!caller) throw new Error('a route ran without an authenticated caller');
  return caller;
}

/** Every route but those `open` lets through needs a caller; 401 `invalid_token` otherwise (RFC 6750 §3). */
export function requireCaller(auth: Authentication, open: (path: string) => boolean): MiddlewareHandler {
  return async (c, next) => {
    if (open(c.req.path)) return next();
    const caller = await auth.callerOf(c.req.raw);
    if (caller) {
      c.set('caller' as never, caller as never);
      return next();
    }
    c.header('WWW-Authenticate', 'Bearer error="invalid_token"');
    return commandError(c, { code: 'Unauthorized', message: 'a valid bearer token is required' });
  };
}

/** What an embedder's `authenticate` answered, checked like any input: a malformed answer is the embedder's defect. */
function checkedCaller(caller: Caller): Caller {
  const parsed = callerSchema.safeParse(caller);
  if (!parsed.success) throw new Error(`authenticate answered a caller that is not { principal, roles }: ${parsed.error.message}`);
  // The operator's principal owns what the shared token and an unauthenticated host created; nobody else may take it.
  if (parsed.data.principal === OPERATOR.principal) throw new Error(`authenticate answered the principal '${OPERATOR.principal}', which is reserved for the host's operator`);
  return parsed.data;
}

function bearerOf(authorization: string | undefined): string | null {
  return /^Bearer ([^\s]+)$/i.exec(authorization ?? '')?.[1] ?? null;
}

/**
 * Both sides are hashed first so the comparison takes the same time whatever the length or
 * content of the token offered.
 */
function sharedToken(token: string | null): (authorization: string | undefined) => boolean {
  const expected = token === null ? null : digest(token);
  return (authorization) => {
    if (expected === null) return false;
    const offered = /^Bearer (.+)$/i.exec(authorization ?? '')?.[1] ?? '';
    return timingSafeEqual(digest(offered), expected);
  };
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest();
}
