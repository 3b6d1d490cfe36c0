import type { Runtime } from '../runtime/runtime.js';
import { ApiError } from './errors.js';

/** What the host tells about an agent besides what the runtime knows: for people choosing one. */
export interface AgentNote {
  description?: string;
  /** The description of the agent's own model; without it the agent runs on the host's model. */
  modelDescription?: string;
}

/** One agent as `GET /agents` lists it. */
export interface AgentEntry {
  name: string;
  description: string | null;
  /** The description of the model its turns run on. */
  model: string;
  /** The tools its model is offered. */
  tools: string[];
}

/** The runtime's own agents, described for the list when the configuration does not describe them. */
const BUILT_IN: Record<string, AgentNote> = {
  default: { description: 'A general agent: uses the tools it is given, and answers plainly when done.' },
  explorer: { description: 'Explores and reports; prefers reading over changing anything.' },
};

/**
 * The agents a client of this host may pick (`POST /sessions { agent }`, `/api/chat`'s `agent`):
 * names and tools from the runtime, descriptions and model descriptions from the host's notes.
 */
export class AgentDirectory {
  constructor(
    private readonly runtime: Runtime,
    private readonly notes: Readonly<Record<string, AgentNote>>,
    /** The host's model, which agents without one of their own run on. */
    private readonly defaultModel: string,
  ) {}

  list(): AgentEntry[] {
    return this.runtime.agentNames().map((name) => {
      const note = (Object.hasOwn(this.notes, name) ? this.notes[name] : undefined) ?? (Object.hasOwn(BUILT_IN, name) ? BUILT_IN[name] : undefined);
      return {
        name,
        description: note?.description ?? null,
        model: note?.modelDescription ?? this.defaultModel,
        tools: this.runtime.toolNamesOf(name) ?? [],
      };
    });
  }

  /** Refuses a name the runtime has no agent for, listing the ones it has (`400 UnknownAgent`). */
  check(name: string | undefined): void {
    if (name === undefined) return;
    const names = this.runtime.agentNames();
    if (!names.includes(name)) throw new ApiError('UnknownAgent', `no agent named '${name}'; agents are: ${names.join(', ')}`, { agents: names });
  }
}
