import { createRoute, type OpenAPIHono } from '@hono/zod-openapi';
import type { HostContext } from '../host-context.js';
import { AgentList, errors } from '../schemas.js';

const list = createRoute({
  method: 'get',
  path: '/agents',
  summary: 'The agents a session may run: each one\'s description, model and the tools its model is offered',
  responses: { 200: { description: 'the agents', content: { 'application/json': { schema: AgentList } } }, ...errors(401) },
});

export function agentRoutes(app: OpenAPIHono, host: HostContext): void {
  app.openapi(list, (c) => c.json({ agents: host.agents.list() }, 200));
}
