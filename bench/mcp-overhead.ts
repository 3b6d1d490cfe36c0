/**
 * `mcp_call_overhead_ratio` (issue 24): µs per tool step of a turn whose tool is an MCP server's
 * `echo` (server-everything over stdio, one process shared by the runtime, as a host shares it)
 * ÷ µs per tool step of the same turn calling a native `echo` tool with the same arguments and
 * answer. Both sides run back to back each round on SQLite :memory:, so the median of the per-round
 * ratios cancels this machine's drift. Beside it, the bare call: `tool.execute` alone, µs per call,
 * MCP and native (what the round trip to the server process costs, without the runtime around it).
 *
 * Run alone: `npx tsx bench/mcp-overhead.ts`.
 */
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { createRuntime, defineTool, sqliteStorage, type AnyTool, type ExecuteContext, type ModelPort, type ModelRequest } from '../src/index.js';
import type { ModelStreamEvent } from '../src/protocol/model.js';
import { McpServers } from '../src/tools/mcp/index.js';
import { median } from './common.js';

const TOOL_STEPS = 10;
const TURNS_PER_ROUND = 5;

const nativeEcho = defineTool({
  name: 'echo',
  description: 'Echoes back the input string',
  effect: 'read',
  input: z.object({ message: z.string() }),
  execute: ({ message }) => ({ status: 'succeeded', content: `Echo: ${message}` }),
});

/** Asks for `toolName` once per step for TOOL_STEPS steps, then answers. */
function echoModel(toolName: string): ModelPort {
  let seq = 0;
  return {
    capabilities: { contextWindow: 128_000, maxOutputTokens: 8_192, maxReasoningTokens: 0 },
    async *stream(request: ModelRequest): AsyncGenerator<ModelStreamEvent> {
      let step = 0;
      for (let i = request.messages.length - 1; i >= 0 && request.messages[i]!.role !== 'user'; i--) if (request.messages[i]!.role === 'assistant') step++;
      const toolCalls = step < TOOL_STEPS ? [{ id: `call_${++seq}`, name: toolName, argumentsText: JSON.stringify({ message: `step ${step}` }) }] : [];
      yield { type: 'response_completed', response: { text: step < TOOL_STEPS ? 'calling' : 'done', reasoning: '', toolCalls } };
    },
  };
}

/** µs per tool step over TURNS_PER_ROUND turns on one runtime. */
async function usPerStep(tool: AnyTool | null, servers: McpServers | null, toolName: string): Promise<number> {
  const runtime = await createRuntime({
    storage: sqliteStorage({ filename: ':memory:' }),
    model: echoModel(toolName),
    tools: tool ? [tool] : [],
    ...(servers && { toolSources: [...servers.sources] }),
  });
  const session = await runtime.createSession({ permissionMode: 'auto' });
  const started = performance.now();
  for (let turn = 0; turn < TURNS_PER_ROUND; turn++) {
    const accepted = await session.startTurn({ clientRequestId: `c${turn}`, input: [{ type: 'text', text: 'go' }] });
    if (!accepted.ok) throw new Error('refused');
    const outcome = await session.waitForTurn(accepted.turnId);
    if (outcome.status !== 'completed') throw new Error(`the turn ended ${outcome.status}`);
  }
  const elapsed = performance.now() - started;
  await runtime.shutdown();
  return (elapsed * 1000) / (TURNS_PER_ROUND * (TOOL_STEPS + 1));
}

/** A fresh signal per call, as the runtime gives each call its own. */
const context = (): ExecuteContext => ({ sessionId: 's', turnId: 't', toolCallId: 'c', signal: new AbortController().signal, progress: () => undefined, approvedPaths: [] });

async function usPerCall(tool: AnyTool, calls: number): Promise<number> {
  const started = performance.now();
  for (let i = 0; i < calls; i++) {
    const result = await tool.execute({ message: `call ${i}` }, context());
    if (result.status !== 'succeeded') throw new Error(result.content);
  }
  return ((performance.now() - started) * 1000) / calls;
}

export interface McpOverheadResult {
  /** Median of the per-round ratios of µs per step, MCP ÷ native. */
  pairedRatio: number;
  mcpStepUs: number;
  nativeStepUs: number;
  mcpCallUs: number;
  nativeCallUs: number;
}

export async function measureMcpOverhead(rounds = 7, warmupRounds = 2): Promise<McpOverheadResult> {
  const require = createRequire(import.meta.url);
  const everything = path.join(path.dirname(require.resolve('@modelcontextprotocol/server-everything/package.json')), 'dist/index.js');
  const servers = await McpServers.start({ everything: { command: process.execPath, args: [everything, 'stdio'] } }, { warn: () => undefined });
  try {
    const mcpEcho = servers.tools().find((t) => t.name === 'everything__echo');
    if (!mcpEcho) throw new Error('server-everything offers no echo tool');
    const ratios: number[] = [];
    const mcpSteps: number[] = [];
    const nativeSteps: number[] = [];
    for (let round = 0; round < warmupRounds + rounds; round++) {
      const mcp = await usPerStep(null, servers, 'everything__echo');
      const native = await usPerStep(nativeEcho, null, 'echo');
      if (round < warmupRounds) continue;
      mcpSteps.push(mcp);
      nativeSteps.push(native);
      ratios.push(mcp / native);
    }
    await usPerCall(mcpEcho, 50);
    const mcpCallUs = await usPerCall(mcpEcho, 300);
    const nativeCallUs = await usPerCall(nativeEcho as AnyTool, 300);
    return { pairedRatio: median(ratios), mcpStepUs: median(mcpSteps), nativeStepUs: median(nativeSteps), mcpCallUs, nativeCallUs };
  } finally {
    await servers.close();
  }
}

export function reportMcpOverhead(r: McpOverheadResult, log: (line?: string) => void = console.log): void {
  log(`[mcp overhead] ${TOOL_STEPS} tool steps + final per turn, ${TURNS_PER_ROUND} turns/round: server-everything's echo over stdio vs a native echo`);
  log(`  per step: MCP ${r.mcpStepUs.toFixed(0)} µs, native ${r.nativeStepUs.toFixed(0)} µs; tool.execute alone: MCP ${r.mcpCallUs.toFixed(0)} µs, native ${r.nativeCallUs.toFixed(1)} µs per call`);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  const result = await measureMcpOverhead();
  reportMcpOverhead(result);
  console.log(`mcp_call_overhead_ratio: ${result.pairedRatio.toFixed(2)}`);
}
