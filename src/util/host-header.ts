import { isIP } from 'node:net';

/**
 * DNS rebinding (issue 22, finding 1): a page on `evil.example` whose name the attacker then
 * points at 127.0.0.1 reaches this host as its own origin, with `Host: evil.example:PORT`. The
 * Host header is the one thing such a request cannot fake, so a request is served only when its
 * Host names this host:
 *
 * - `localhost`, `127.0.0.1`, `[::1]` or the bound address, with the bound port (without a port
 *   only when that is 80, the port a client then leaves out);
 * - bound to every interface (`0.0.0.0`, `::`), any address literal with the bound port: an
 *   address is never the result of a rebinding, which always needs a name the attacker's DNS answers;
 * - a name of `allowedHosts`, with any port or none: the names a proxy or load balancer in front
 *   forwards, whose port is its own.
 *
 * Anything else is `421 Misdirected Request`, and the connection is closed: it was opened for a
 * name this host does not serve.
 */
export interface HostNames {
  /** The address or name the host listens on (`127.0.0.1`, `::1`, `0.0.0.0`, `localhost`, …). */
  bound: string;
  /** Further names (or addresses) a request may name, with any port. */
  allowed: readonly string[];
}

const LABEL = '[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?';
const NAME = new RegExp(`^${LABEL}(?:\\.${LABEL})*$`);

/** The Host header's grammar (RFC 9110 §7.2) narrowed to what a client of this host sends. */
const HOST_HEADER = /^(\[[0-9a-f:.]+\]|[a-z0-9.-]+)(?::([1-9]\d{0,4}))?$/;

const WILDCARDS = new Set(['0.0.0.0', '[::]']);
const LOOPBACK_NAMES = ['localhost', '127.0.0.1', '[::1]'];

/** Whether a request whose Host header is `header`, on a connection to `boundPort`, names this host. */
export function hostMatcher(names: HostNames): (header: string | undefined, boundPort: number | undefined) => boolean {
  const bound = canonicalHostname(names.bound.includes(':') && !names.bound.startsWith('[') ? `[${names.bound}]` : names.bound.toLowerCase());
  const wildcard = bound !== null && WILDCARDS.has(bound);
  const atPort = new Set([...LOOPBACK_NAMES, ...(bound !== null && !wildcard ? [bound] : [])]);
  const anyPort = new Set(names.allowed);
  return (header, boundPort) => {
    const host = parseHost(header);
    if (host === null) return false;
    if (anyPort.has(host.name)) return true;
    if (boundPort === undefined || (host.port ?? 80) !== boundPort) return false;
    return atPort.has(host.name) || (wildcard && isIP(host.name.replace(/^\[|\]$/g, '')) !== 0);
  };
}

/** The Host header's name (lowercased, an IPv6 address canonical and bracketed) and port; null when it is not one. */
function parseHost(header: string | undefined): { name: string; port: number | null } | null {
  const match = header === undefined ? null : HOST_HEADER.exec(header.toLowerCase());
  if (!match) return null;
  const name = canonicalHostname(match[1]!);
  const port = match[2] === undefined ? null : Number(match[2]);
  if (name === null || (port !== null && port > 65_535)) return null;
  return { name, port };
}

/** A lowercased host name as a URL would write it (`[0:0::1]` is `[::1]`), or null when it is no name or address. */
export function canonicalHostname(host: string): string | null {
  if (host.startsWith('[')) {
    if (!host.endsWith(']') || isIP(host.slice(1, -1)) !== 6) return null;
    return new URL(`http://${host}/`).hostname;
  }
  if (isIP(host) === 4) return host;
  return NAME.test(host) && !/^[\d.]+$/.test(host) ? host : null;
}
