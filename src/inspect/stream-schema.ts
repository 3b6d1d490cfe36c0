import { z } from 'zod';
import type { ActorChange, ActorState, StreamItem, VersionedActorState } from './stream-protocol.js';

/**
 * The actor messages of the inspector's stream as zod schemas: what a client may rely on when it
 * rebuilds actors from deltas. Strict, so a field the protocol does not name is an error, not a
 * silent extra. The types in `stream-protocol.ts` stay the page's (it bundles no zod); the checks
 * at the end keep both the same shape.
 */
const ActorInfoSchema = z.strictObject({ actorId: z.string(), parentId: z.string().nullable(), name: z.string(), machineId: z.string().nullable() });

const ActorStateSchema = z.strictObject({
  actor: ActorInfoSchema,
  status: z.string(),
  states: z.array(z.string()),
  children: z.record(z.string(), z.string()),
  context: z.unknown(),
});

export const VersionedActorStateSchema = z.strictObject({ version: z.number().int().min(0), state: ActorStateSchema });

/** At least one part, and the context either key by key or whole: never both. */
const ActorChangeSchema = z
  .strictObject({
    status: z.string().optional(),
    states: z.array(z.string()).optional(),
    children: z.record(z.string(), z.string()).optional(),
    set: z.record(z.string(), z.unknown()).optional(),
    unset: z.array(z.string()).min(1).optional(),
    context: z.unknown().optional(),
  })
  .refine((c) => !('context' in c) || (c.set === undefined && c.unset === undefined), { message: 'a whole context and keys both' })
  .refine((c) => c.unset === undefined || c.set === undefined || !c.unset.some((key) => Object.hasOwn(c.set!, key)), { message: 'a key both set and unset' });

const TakenTransitionSchema = z.strictObject({ source: z.string(), targets: z.array(z.string()), eventType: z.string() });

const ActorMessageHead = {
  cursor: z.number().int().positive(),
  at: z.number(),
  actorId: z.string(),
  eventType: z.string(),
  transitions: z.array(TakenTransitionSchema),
};

export const ActorMessageSchema = z.discriminatedUnion('kind', [
  z.strictObject({ kind: z.literal('snapshot'), ...ActorMessageHead, version: z.number().int().positive(), state: ActorStateSchema }),
  // Version 1 is always whole: a delta has a message before it.
  z.strictObject({ kind: z.literal('delta'), ...ActorMessageHead, version: z.number().int().min(2), change: ActorChangeSchema }),
]);

type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const sameShapes: [
  Same<z.infer<typeof ActorStateSchema>, ActorState>,
  Same<z.infer<typeof VersionedActorStateSchema>, VersionedActorState>,
  Same<z.infer<typeof ActorChangeSchema>, ActorChange>,
  Same<z.infer<typeof ActorMessageSchema>, Extract<StreamItem, { kind: 'snapshot' | 'delta' }>>,
] = [true, true, true, true];
void sameShapes;
