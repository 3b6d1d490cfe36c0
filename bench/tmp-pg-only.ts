import { randomUUID } from 'node:crypto';
import { createRuntime, postgresStorage } from '../src/index.js';
import { dropPostgresSchema } from '../storage/postgres.js';
import { readTool, stepModel } from './common.js';
const URL = 'postgres://postgres@127.0.0.1:5432/test';
const schema = `tc_tmp_${randomUUID().replaceAll('-', '')}`;
const rt = await createRuntime({ storage: postgresStorage({ connectionString: URL, schema, applicationName: 'tmp_pg_only' }), model: stepModel(9), tools: [readTool()], agents: { default: { maxModelCalls: 50 } } });
const rounds = Number(process.argv[2] ?? 20);
for (let r = 0; r < rounds; r++) {
  const t = performance.now();
  for (let i = 0; i < 60; i++) {
    const s = await rt.createSession({ agent: 'default', permissionMode: 'auto' });
    const st = await s.startTurn({ clientRequestId: `c${i}`, input: [{ type: 'text', text: 'go' }] });
    if (!st.ok) throw new Error('x');
    await s.waitForTurn(st.turnId);
  }
  console.log(`round ${r} ${((performance.now() - t) * 1000 / 600).toFixed(0)} us/step`);
}
await rt.shutdown();
await dropPostgresSchema(URL, schema);
