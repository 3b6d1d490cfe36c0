import type { MiddlewareHandler } from 'hono';
import type { IncomingMessage } from 'node:http';
import { z } from 'zod';
import { commandError } from './errors.js';
import { canonicalHostname, hostMatcher, type HostNames } from '../util/host-header.js';

export type { HostNames };

/** An entry of `--allowed-hosts`: a DNS name, an IPv4 address or a bracketed IPv6 one, without a port. */
export const allowedHostSchema = z
  .string()
  .trim()
  .toLowerCase()
  .refine((host) => canonicalHostname(host) !== null, 'a host name or address without a port (IPv6 in brackets)')
  .transform((host) => canonicalHostname(host)!);

/** DNS rebinding (issue 22, finding 1): only a request whose Host names this host is served (`../util/host-header.ts`); anything else is 421 and the connection is closed. */
export function hostCheck(names: HostNames): MiddlewareHandler {
  const serves = hostMatcher(names);
  return async (c, next) => {
    // The port the connection came to, which is the bound one (known only once listening, with port 0).
    const boundPort = (c.env as { incoming?: IncomingMessage } | undefined)?.incoming?.socket.localPort;
    if (serves(c.req.header('host'), boundPort)) return next();
    c.header('Connection', 'close');
    return commandError(c, {
      code: 'MisdirectedRequest',
      message: 'the Host header names no address or name of this host (add the name with --allowed-hosts to serve it)',
    });
  };
}
