import { scriptedModel, type ModelPort, type ModelRequest, type ScriptedStep } from '../../src/index.js';

/**
 * One model port for several agents: each call goes to the script of the agent whose system prompt
 * it carries, so a parent's and its children's calls can interleave in any order and each still
 * gets its own replies. `requests[agent]` records each agent's requests.
 */
export function routedModel(scripts: Record<string, { prompt: string; steps: ScriptedStep[] }>) {
  const routes = Object.entries(scripts).map(([agent, { prompt, steps }]) => ({ agent, prompt, model: scriptedModel(steps) }));
  const requests: Record<string, ModelRequest[]> = Object.fromEntries(routes.map((r) => [r.agent, r.model.requests]));
  const port: ModelPort = {
    capabilities: routes[0]!.model.capabilities,
    stream(request, options) {
      const system = request.system.map((part) => part.content).join('\n');
      const route = routes.find((r) => system.includes(r.prompt));
      if (!route) throw new Error(`no script for a request whose system context is: ${system.slice(0, 200)}`);
      return route.model.stream(request, options);
    },
  };
  return { port, requests };
}
