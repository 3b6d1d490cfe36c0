import { readFile } from 'node:fs/promises';
import { agentDataSettings } from '../runtime/agents.js';
import { isAbsolute, resolve } from 'node:path';
import type { LanguageModelV3 } from '@ai-sdk/provider';
import { aiSdkModel } from '../model/ai-sdk-model.js';
import { demoModel } from '../model/demo-model.js';
import { modelFromSpec, type ModelChoice, type ProviderSettings } from '../model/model-spec.js';
import { messageOf } from '../protocol/error-message.js';
import type { PermissionRules } from '../protocol/permission-rule.js';
import type { AgentNote } from '../host/agent-directory.js';
import type { AgentConfig } from '../runtime/agents.js';
import type { SkillsConfig } from '../skills/types.js';
import type { AnyTool } from '../tools/define-tool.js';
import type { McpServersConfig } from '../tools/mcp/server-config.js';
import { WORKSPACE_TOOL_NAMES } from '../tools/workspace/index.js';
import { ConfigError, type LoadedConfig } from './config-file.js';
import { isLanguageModel, type AgentFileConfig } from './config-schema.js';

/** A configuration file turned into what the runtime and the host take. */
export interface ResolvedConfig {
  /** The model of agents that name none: `--model` when given, else the file's default. */
  model: ModelChoice;
  agents: Record<string, AgentConfig>;
  notes: Record<string, AgentNote>;
  /** The `defineTool` values the agents list, added to the runtime's tools. */
  tools: AnyTool[];
  mcpServers?: McpServersConfig;
  permissions?: PermissionRules;
  skills?: SkillsConfig;
}

export interface ResolveOptions {
  /** `--model` or `TURNCHART_MODEL`: overrides the file's default model. */
  modelOverride?: string | undefined;
  /** The model flags, for every model built from a spec or an AI SDK instance. */
  provider: ProviderSettings;
}

/**
 * Checks what the file's names refer to — models, tools, MCP servers, instruction files — and
 * builds the models. Every error names the file and the key path, before anything is started.
 */
export async function resolveConfig(loaded: LoadedConfig, options: ResolveOptions): Promise<ResolvedConfig> {
  const { config } = loaded;
  const fail = (path: string, problem: string): never => {
    throw new ConfigError(loaded.name, path, problem);
  };
  const modelNames = Object.keys(config.models ?? {});
  const modelList = modelNames.length > 0 ? `models are: ${modelNames.join(', ')}` : 'the file defines no models';
  if (config.defaultModel !== undefined && !modelNames.includes(config.defaultModel)) fail('defaultModel', `no model named '${config.defaultModel}'; ${modelList}`);
  if (config.defaultModel !== undefined && config.model !== undefined) fail('model', 'set either model (a spec) or defaultModel (a key of models), not both');

  const agentNames = Object.keys(config.agents ?? {});
  const serverNames = Object.keys(config.mcpServers ?? {});
  const fileTools = collectTools(config.agents ?? {}, fail);
  const knownTools = [...WORKSPACE_TOOL_NAMES, ...fileTools.keys()];

  const agents: Record<string, AgentConfig> = {};
  const notes: Record<string, AgentNote> = {};
  const built = new Map<string, Promise<ModelChoice>>();
  const named = (name: string): Promise<ModelChoice> => {
    let choice = built.get(name);
    if (!choice) {
      choice = buildModel(config.models![name]!, loaded, options.provider, `models.${name}`);
      built.set(name, choice);
    }
    return choice;
  };

  for (const [name, agent] of Object.entries(config.agents ?? {})) {
    const at = `agents.${name}`;
    if (agent.model !== undefined && !modelNames.includes(agent.model)) fail(`${at}.model`, `no model named '${agent.model}'; ${modelList}`);
    for (const [index, server] of (agent.mcp ?? []).entries()) {
      if (!serverNames.includes(server)) {
        fail(`${at}.mcp.${index}`, `no MCP server named '${server}'; ${serverNames.length > 0 ? `mcpServers are: ${serverNames.join(', ')}` : 'the file configures no mcpServers'}`);
      }
    }
    for (const [index, tool] of (agent.tools ?? []).entries()) {
      if (typeof tool === 'string' && !knownTools.includes(tool)) fail(`${at}.tools.${index}`, `no tool named '${tool}'; tools are: ${knownTools.join(', ')}`);
    }
    for (const [index, other] of (agent.delegation?.agents ?? []).entries()) {
      if (!agentNames.includes(other) && other !== 'default' && other !== 'explorer') {
        fail(`${at}.delegation.agents.${index}`, `no agent named '${other}'; agents are: ${[...agentNames, 'default', 'explorer'].join(', ')}`);
      }
    }
    for (const [index, other] of (agent.switchTo ?? []).entries()) {
      if (!agentNames.includes(other) && other !== 'default' && other !== 'explorer') {
        fail(`${at}.switchTo.${index}`, `no agent named '${other}'; agents are: ${[...agentNames, 'default', 'explorer'].join(', ')}`);
      }
    }
    const systemPrompt = await instructionsOf(agent, loaded, `${at}.instructions`);
    const tools = toolList(agent);
    agents[name] = {
      systemPrompt,
      tools,
      ...(agent.permissions && { permissions: agent.permissions }),
      ...(agent.guardrails !== undefined && { guardrails: agent.guardrails }),
      ...(agent.delegation && { delegation: agent.delegation }),
      ...(agent.sandbox && { sandbox: agent.sandbox }),
      ...dataSettingsOf(agent),
      ...(agent.model !== undefined && { model: (await named(agent.model)).model }),
    };
    notes[name] = { description: agent.description, ...(agent.model !== undefined && { modelDescription: (await named(agent.model)).description }) };
  }

  const defaultName = config.defaultModel ?? (modelNames.includes('default') ? 'default' : modelNames[0]);
  const model =
    options.modelOverride !== undefined
      ? await modelFromSpec(options.modelOverride, options.provider)
      : config.model !== undefined
        ? await buildModel(config.model, loaded, options.provider, 'model')
        : defaultName !== undefined
          ? await named(defaultName)
          : await modelFromSpec(undefined);

  // The built-in agents, unless the file redefines them, keep to the workspace tools for the same reason.
  for (const builtIn of ['default', 'explorer']) agents[builtIn] ??= { tools: [...WORKSPACE_TOOL_NAMES] };

  return {
    model,
    agents,
    notes,
    tools: [...fileTools.values()],
    ...(config.mcpServers && { mcpServers: config.mcpServers }),
    ...(config.permissions && { permissions: config.permissions }),
    ...(config.skills && { skills: { ...config.skills, dir: resolve(loaded.dir, config.skills.dir) } }),
  };
}

/** The tools `defineTool` made in the file, by name: one name, one tool, and never a workspace tool's name. */
function collectTools(agents: Record<string, AgentFileConfig>, fail: (path: string, problem: string) => never): Map<string, AnyTool> {
  const tools = new Map<string, AnyTool>();
  for (const [name, agent] of Object.entries(agents)) {
    for (const [index, tool] of (agent.tools ?? []).entries()) {
      if (typeof tool === 'string') continue;
      const at = `agents.${name}.tools.${index}`;
      if ((WORKSPACE_TOOL_NAMES as readonly string[]).includes(tool.name)) fail(at, `the tool '${tool.name}' has the name of a workspace tool; give it another`);
      const known = tools.get(tool.name);
      if (known && known !== tool) fail(at, `another tool is also named '${tool.name}'; tool names must be unique`);
      tools.set(tool.name, tool);
    }
  }
  return tools;
}

/**
 * The runtime's tool list for an agent: the tools named (or every workspace tool when none are),
 * and each MCP server's tools by their prefix. Always a list: the runtime's default (every tool)
 * would hand an agent the MCP servers and the `defineTool` tools of the others.
 */
function toolList(agent: AgentFileConfig): string[] {
  const own = agent.tools === undefined ? [...WORKSPACE_TOOL_NAMES] : agent.tools.map((tool) => (typeof tool === 'string' ? tool : tool.name));
  return [...new Set([...own, ...(agent.mcp ?? []).map((server) => `${server}__*`)])];
}

async function instructionsOf(agent: AgentFileConfig, loaded: LoadedConfig, at: string): Promise<string> {
  if (typeof agent.instructions === 'string') return agent.instructions;
  const file = resolve(loaded.dir, agent.instructions.file);
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    throw new ConfigError(loaded.name, `${at}.file`, `cannot read ${agent.instructions.file}: ${messageOf(error)}`);
  }
  if (text.trim() === '') throw new ConfigError(loaded.name, `${at}.file`, `${agent.instructions.file} is empty`);
  return text;
}

/** A spec (`scripted:` paths relative to the file; `demo` for the demo model) or an AI SDK model, as a model port. */
async function buildModel(entry: string | LanguageModelV3, loaded: LoadedConfig, provider: ProviderSettings, at: string): Promise<ModelChoice> {
  if (isLanguageModel(entry)) {
    if (entry.specificationVersion !== 'v3') {
      throw new ConfigError(loaded.name, at, `an AI SDK LanguageModel of specification '${String(entry.specificationVersion)}': turnchart takes 'v3' models (AI SDK 6 provider packages)`);
    }
    const model = aiSdkModel(entry, {
      ...(provider.capabilities && { capabilities: provider.capabilities }),
      ...(provider.maxRetries !== undefined && { maxRetries: provider.maxRetries }),
      ...(provider.stallTimeoutMs !== undefined && { stallTimeoutMs: provider.stallTimeoutMs }),
    });
    return { model, description: `${entry.provider} ${entry.modelId}` };
  }
  if (entry === 'demo') return { model: demoModel(), description: 'the demo model (scripted)' };
  const spec = entry.startsWith('scripted:') && !isAbsolute(entry.slice('scripted:'.length)) ? `scripted:${resolve(loaded.dir, entry.slice('scripted:'.length))}` : entry;
  try {
    return await modelFromSpec(spec, provider);
  } catch (error) {
    throw new ConfigError(loaded.name, at, messageOf(error));
  }
}

/** The plain-data settings the file gave the agent, as the runtime takes them (each only when given). */
function dataSettingsOf(agent: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.keys(agentDataSettings).flatMap((key) => (agent[key] === undefined ? [] : [[key, agent[key]]])));
}
