/**
 * A diagnostic, not part of `npm run bench`: the inspector watch's own work per message while its
 * 2 000-message buffer fills and once it is full, when every new message pushes the oldest out.
 * 20 watched sessions of the `inspect_overhead_ratio` workload run 12 turns each (some 260
 * messages a turn: the buffer is full during the ninth); the time inside the watch's batch step
 * (`flush`: making each message, buffering it, handing it to the page, and letting the oldest go)
 * is summed per turn. Prints µs per message for turns 2–7 and 10–12, medians over `rounds` fresh
 * runtimes. Run it compiled: `npx tsc -p tsconfig.bench.json && node .turnchart/bench-build/bench/watch-flush.js [rounds]`.
 */
import { createRuntime, sqliteStorage, type SessionHandle } from '../src/index.js';
import { InspectHub } from '../src/inspect/inspect-hub.js';
import { SessionWatch } from '../src/inspect/session-watch.js';
import { median, readTool, stepModel } from './common.js';

const SESSIONS = 20;
const TURNS = 12;

// The batch step is private: timed from outside, as a profiler would.
const proto = SessionWatch.prototype as unknown as { flush(): void };
const flush = proto.flush;
let flushUs = 0;
proto.flush = function (this: unknown) {
  const started = performance.now();
  flush.call(this);
  flushUs += (performance.now() - started) * 1000;
};

async function round(): Promise<{ filling: number; full: number }> {
  const runtime = await createRuntime({ storage: sqliteStorage({ filename: ':memory:' }), model: stepModel(10), tools: [readTool()], agents: { default: { maxModelCalls: 50 } } });
  const hub = new InspectHub();
  const sessions: SessionHandle[] = [];
  let messages = 0;
  for (let i = 0; i < SESSIONS; i++) {
    const session = await runtime.createSession({ agent: 'default', permissionMode: 'auto' });
    hub.watch(session).listen({ item: () => (messages += 1), end: () => undefined }, null);
    sessions.push(session);
  }
  const perTurn: number[] = [];
  for (let turn = 0; turn < TURNS; turn++) {
    flushUs = 0;
    messages = 0;
    for (const session of sessions) {
      const started = await session.startTurn({ clientRequestId: `t${turn}`, input: [{ type: 'text', text: 'read the files' }] });
      if (!started.ok) throw new Error(`startTurn refused: ${JSON.stringify(started.error)}`);
      await session.waitForTurn(started.turnId);
    }
    await new Promise((resolve) => setImmediate(resolve));
    perTurn.push(flushUs / messages);
  }
  await runtime.shutdown();
  return { filling: median(perTurn.slice(1, 7)), full: median(perTurn.slice(9)) };
}

const rounds = Number(process.argv[2] ?? 5);
const results: { filling: number; full: number }[] = [];
for (let i = 0; i < rounds; i++) results.push(await round());
const filling = median(results.map((r) => r.filling));
const full = median(results.map((r) => r.full));
console.log(`the watch's work per message: ${filling.toFixed(2)} µs while its buffer fills, ${full.toFixed(2)} µs once it is full (medians of ${rounds} rounds)`);
