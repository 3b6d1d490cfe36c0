import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineTool, prepare, TurnchartError, UPDATE_PLAN, type AnyTool, type ToolDefinition } from '../../src/index.js';
import { summarySystemContext, systemContext } from '../../src/context/system-context.js';
import { Toolset } from '../../src/tools/toolset.js';

function registry(): AnyTool[] {
  return [
    defineTool({
      name: 'read_file',
      description: 'Read a file.',
      effect: 'read',
      input: z.object({ path: z.string().min(1), limit: z.number().int().optional() }),
      execute: () => ({ status: 'succeeded', content: '' }),
    }),
    defineTool({
      name: 'shell',
      description: 'Run a command.',
      effect: 'execute',
      input: z.object({ command: z.string(), timeoutMs: z.number().default(10_000) }),
      execute: () => ({ status: 'succeeded', content: '' }),
    }),
  ];
}

function namedTool(name: string): AnyTool {
  return defineTool({ name, description: 'x', effect: 'read', input: z.object({}), execute: () => ({ status: 'succeeded', content: '' }) });
}

function thrown(run: () => unknown): unknown {
  try {
    run();
  } catch (error) {
    return error;
  }
  throw new Error('expected a throw');
}

const PROMPT = 'You are a careful assistant.';

describe('Toolset (CW-5)', () => {
  it('builds the same definitions, in registry order then update_plan, from the same tools', () => {
    const a = new Toolset(registry()).definitions;
    const b = new Toolset(registry()).definitions;
    expect(a.map((d) => d.name)).toEqual(['read_file', 'shell', UPDATE_PLAN]);
    expect(b).toEqual(a);
    expect(JSON.stringify(b)).toBe(JSON.stringify(a));
    expect(a[0]).toMatchObject({ name: 'read_file', description: 'Read a file.', inputSchema: { type: 'object' } });
    expect(a[0]!.inputSchema).toMatchObject({ properties: { path: { type: 'string', minLength: 1 } }, required: ['path'] });
  });

  it('keeps the registry order it is given', () => {
    const reversed = new Toolset([...registry()].reverse()).definitions;
    expect(reversed.map((d) => d.name)).toEqual(['shell', 'read_file', UPDATE_PLAN]);
  });

  it('advertises update_plan alone for an empty registry', () => {
    const toolset = new Toolset([]);
    expect(toolset.definitions.map((d) => d.name)).toEqual([UPDATE_PLAN]);
    expect(toolset.isControlTool(UPDATE_PLAN)).toBe(true);
    expect(toolset.registryTool(UPDATE_PLAN)).toBeUndefined();
  });

  it('resolves registry tools by name', () => {
    const tools = registry();
    const toolset = new Toolset(tools);
    expect(toolset.registryTool('shell')).toBe(tools[1]);
    expect(toolset.registryTool('missing')).toBeUndefined();
    expect(toolset.isControlTool('shell')).toBe(false);
  });

  it('refuses a registry tool named update_plan', () => {
    const error = thrown(() => new Toolset([...registry(), namedTool('update_plan')]));
    expect(error).toBeInstanceOf(TurnchartError);
    expect((error as TurnchartError).code).toBe('ToolNameConflict');
  });

  it('refuses two registry tools with one name', () => {
    const error = thrown(() => new Toolset([namedTool('dup'), namedTool('dup')]));
    expect(error).toBeInstanceOf(TurnchartError);
    expect((error as TurnchartError).code).toBe('ToolNameConflict');
  });
});

describe('systemContext (CW-1)', () => {
  it('is one core/agent-system part starting with the agent prompt', () => {
    const parts = systemContext(PROMPT, new Toolset(registry()).definitions);
    expect(parts).toHaveLength(1);
    expect(parts[0]!.key).toBe('core/agent-system');
    expect(parts[0]!.content.startsWith(`${PROMPT}\n\n`)).toBe(true);
  });

  it('carries the update_plan rule only when update_plan is advertised', () => {
    const all = new Toolset(registry()).definitions;
    const withoutPlan: ToolDefinition[] = all.filter((d) => d.name !== UPDATE_PLAN);
    expect(systemContext(PROMPT, all)[0]!.content).toContain('update_plan');
    expect(systemContext(PROMPT, withoutPlan)[0]!.content).not.toContain('update_plan');
    expect(systemContext(PROMPT, [])[0]!.content).toBe(PROMPT);
    const onlyPlan = new Toolset([]).definitions;
    expect(systemContext(PROMPT, onlyPlan)[0]!.content).toContain('update_plan');
  });

  it('is byte-identical for the same inputs, and passes assembly validation', () => {
    const first = systemContext(PROMPT, new Toolset(registry()).definitions);
    const again = systemContext(PROMPT, new Toolset(registry()).definitions);
    expect(JSON.stringify(again)).toBe(JSON.stringify(first));
    const { request } = prepare({
      system: first,
      conversation: [],
      tools: new Toolset(registry()).definitions,
      capabilities: { contextWindow: 100_000, maxOutputTokens: 1_000, maxReasoningTokens: 0 },
      watermark: 0,
    });
    expect(request.system).toEqual(first);
  });

  it('leaves the tool rules out of the summary system context', () => {
    expect(summarySystemContext(PROMPT)).toEqual([{ key: 'core/agent-system', content: PROMPT }]);
  });
});
