import { createSecretKey, type KeyObject } from 'node:crypto';
import { createRemoteJWKSet, errors as joseErrors, jwtVerify, type JWTPayload, type JWTVerifyGetKey } from 'jose';
import { TurnchartError } from '../protocol/errors.js';
import { callerSchema, OPERATOR, type Caller } from '../protocol/principal.js';

/** Where a host's JWTs are checked: a shared HS256 secret, or the issuer's published keys (RS256/ES256). */
export type JwtKeys = { secret: string } | { jwksUrl: string };

export interface JwtSettings {
  keys: JwtKeys;
  /** `iss` every token must carry, when set. */
  issuer?: string;
  /** `aud` every token must name, when set. */
  audience?: string;
  /**
   * With `jwksUrl`: how soon after a fetch of the keys a token with an unknown `kid` may fetch them
   * again (jose's `cooldownDuration`; 30 s by default). A key the issuer rotates in is accepted once
   * this has passed, and made-up `kid`s cost at most one fetch per period. Tests shorten it to see
   * a rotation without waiting.
   */
  jwksCooldownMs?: number;
}

/** Shorter secrets are guessable offline from one token (RFC 7518 §3.2 asks for the hash's size, 256 bits). */
const MIN_SECRET_BYTES = 32;
/** How long fetched keys are trusted before they are fetched again, and how soon an unknown `kid` may fetch them. */
const JWKS_CACHE_MS = 10 * 60_000;
const JWKS_COOLDOWN_MS = 30_000;
/** Allowed clock difference between the issuer and this host. */
const CLOCK_TOLERANCE_S = 30;
/**
 * Tokens verified lately, kept until they expire (or a minute passes): a client sends the same
 * token on every request, and a signature check is most of what authenticating one costs.
 */
const CACHE_MAX = 10_000;
const CACHE_MS = 60_000;

/**
 * Verifies bearer JWTs with `jose` (issue 25): the signature with the configured key and only its
 * algorithms (never `none`, never a secret offered as a public key), `exp`/`nbf`, and `iss`/`aud`
 * when set. `sub` is the principal (never `operator`, the shared token's); a `roles` claim (an
 * array, or a space-separated string) holding `admin` makes an operator. A token that fails any of
 * this is null: the caller is told 401 `invalid_token`, never why (that would help forge one).
 */
export class JwtVerifier {
  private readonly key: KeyObject | JWTVerifyGetKey;
  private readonly algorithms: string[];
  private readonly verified = new Map<string, { caller: Caller; untilMs: number }>();

  constructor(private readonly settings: JwtSettings) {
    if ('secret' in settings.keys) {
      const secret = new TextEncoder().encode(settings.keys.secret);
      if (secret.byteLength < MIN_SECRET_BYTES) {
        throw new TurnchartError('InvalidOptions', `--jwt-secret must be at least ${MIN_SECRET_BYTES} bytes (HS256 needs a 256-bit key)`);
      }
      // Imported once: handed bytes, jose would import a key on every verification (bench/README.md, the auth figure).
      this.key = createSecretKey(secret);
      this.algorithms = ['HS256'];
    } else {
      let url: URL;
      try {
        url = new URL(settings.keys.jwksUrl);
      } catch {
        throw new TurnchartError('InvalidOptions', `--jwks-url is not a URL: ${settings.keys.jwksUrl}`);
      }
      if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new TurnchartError('InvalidOptions', '--jwks-url must be an http(s) URL');
      this.key = createRemoteJWKSet(url, { cacheMaxAge: JWKS_CACHE_MS, cooldownDuration: settings.jwksCooldownMs ?? JWKS_COOLDOWN_MS });
      this.algorithms = ['RS256', 'ES256'];
    }
  }

  /** The caller a token names, or null when it is not one this host accepts. */
  async verify(token: string, nowMs = Date.now()): Promise<Caller | null> {
    const known = this.verified.get(token);
    if (known && known.untilMs > nowMs) return known.caller;
    if (known) this.verified.delete(token);
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, this.key as KeyObject, {
        algorithms: this.algorithms,
        clockTolerance: CLOCK_TOLERANCE_S,
        ...(this.settings.issuer !== undefined && { issuer: this.settings.issuer }),
        ...(this.settings.audience !== undefined && { audience: this.settings.audience }),
        requiredClaims: ['sub'],
      }));
    } catch (error) {
      if (error instanceof joseErrors.JOSEError) return null;
      throw error;
    }
    const caller = callerOf(payload);
    if (caller) this.remember(token, caller, nowMs, payload.exp);
    return caller;
  }

  private remember(token: string, caller: Caller, nowMs: number, expS: number | undefined): void {
    if (this.verified.size >= CACHE_MAX) this.verified.delete(this.verified.keys().next().value!);
    const untilMs = Math.min(nowMs + CACHE_MS, expS === undefined ? Infinity : expS * 1000);
    this.verified.set(token, { caller, untilMs });
  }
}

function callerOf(payload: JWTPayload): Caller | null {
  // The operator's principal owns what the shared token (or a host without auth) created: a token naming it would be given those sessions.
  if (payload.sub === OPERATOR.principal) return null;
  const roles = payload.roles;
  const parsed = callerSchema.safeParse({
    principal: payload.sub,
    roles: Array.isArray(roles) ? roles.filter((role) => typeof role === 'string') : typeof roles === 'string' ? roles.split(' ').filter(Boolean) : [],
  });
  return parsed.success ? parsed.data : null;
}
