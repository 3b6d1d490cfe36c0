import { measureConcurrentSessions } from './concurrency.js';
for (const n of [100, 300, 1000, 2000]) {
  const r = await measureConcurrentSessions(n, 2);
  console.log(n, 'wall', Math.round(r.wallMs), 'ms', (r.wallMs / n).toFixed(2), 'ms/turn', 'dropped', r.droppedSignals, 'completed', r.completed);
}
