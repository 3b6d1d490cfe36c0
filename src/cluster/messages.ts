import { z } from 'zod';
import { callerSchema } from '../protocol/principal.js';
import { isRoutedCommand, type RoutedCommandName } from '../protocol/command-catalog.js';

/**
 * What hosts of a cluster send each other. A routed command names its session, the catalog command
 * and its input as the client sent it, because the owner's session handle validates it exactly as
 * it does for a local request; the queries name what they read.
 */
const sessionId = z.string().min(1).max(200);
const ref = z.string().max(10_000);
/** Issue 25: who the request came from; the owning host checks it again before it runs anything. */
const caller = callerSchema;

export const commandRequestSchema = z.discriminatedUnion('op', [
  /** A command of the catalog (`src/protocol/command-catalog.ts`) that hosts route; a command without input has none in JSON. */
  z.object({ op: z.literal('command'), sessionId, caller, name: z.custom<RoutedCommandName>((name) => typeof name === 'string' && isRoutedCommand(name)), input: z.unknown().optional() }),
  z.object({ op: z.literal('snapshot'), sessionId, caller }),
  z.object({ op: z.literal('turnState'), sessionId, caller, turnId: ref, waitMs: z.number().int().min(0).max(120_000) }),
  z.object({ op: z.literal('context'), sessionId, caller }),
  /** Where an event stream starts (snapshot or replay); its live part comes through the updates exchange. */
  z.object({ op: z.literal('feed'), sessionId, caller, after: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER).nullable() }),
  /** Which of these sessions the host has open (a follower checks the owner it follows still holds them). */
  z.object({ op: z.literal('holds'), sessionIds: z.array(sessionId).max(10_000) }),
]);

export type CommandRequest = z.infer<typeof commandRequestSchema>;

export const replySchema = z.union([
  z.object({ ok: z.literal(true), value: z.unknown() }),
  z.object({ ok: z.literal(false), error: z.looseObject({ code: z.string().min(1), message: z.string() }) }),
]);

export type CommandReply = z.infer<typeof replySchema>;

/** An update envelope as the updates exchange carries it; the fields a follower orders and routes by. */
export const envelopeSchema = z.looseObject({
  sessionId,
  turnId: z.string(),
  sequence: z.number().int().min(1),
  update: z.looseObject({ type: z.string() }),
});

export const closedSchema = z.object({ sessionId });

/** A message body as JSON, or undefined when it is not JSON at all. */
export function parseBody(content: Buffer): unknown {
  try {
    return JSON.parse(content.toString('utf8')) as unknown;
  } catch {
    return undefined;
  }
}
