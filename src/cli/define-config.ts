import type { ConfigFile } from './config-schema.js';

/** What `turnchart.config.ts` exports: the keys of `turnchart serve`, models, agents, MCP servers, permission rules. */
export type TurnchartConfig = ConfigFile;

/** Types a configuration file's default export; returns it as it is (`export default defineConfig({ … })`). */
export function defineConfig(config: TurnchartConfig): TurnchartConfig {
  return config;
}
