/**
 * An embedding program that runs one turn and then simply ends its script, never calling
 * `runtime.shutdown()`: nothing of turnchart's (timers, idle pooled connections) may keep it alive.
 * Usage: forgetful-embedder.ts sqlite <file> | postgres <url> <schema>
 */
import { createRuntime, postgresStorage, scriptedModel, sqliteStorage } from '../../src/index.js';

const [kind, where, schema] = process.argv.slice(2);
const storage = kind === 'postgres' ? postgresStorage({ connectionString: where!, ...(schema && { schema }) }) : sqliteStorage({ filename: where! });
const runtime = await createRuntime({ storage, model: scriptedModel([{ text: 'done' }]) });
const session = await runtime.createSession({ permissionMode: 'auto' });
const turn = await session.startTurn({ clientRequestId: 'c1', input: [{ type: 'text', text: 'go' }] });
if (!turn.ok) throw new Error(JSON.stringify(turn.error));
const outcome = await session.waitForTurn(turn.turnId);
console.log(`TURN ${outcome.status}`);
