import { readFile } from 'node:fs/promises';
import { z } from 'zod';
import type { ModelPort } from '../protocol/model.js';
import { TurnchartError } from '../protocol/errors.js';
import { demoModel } from './demo-model.js';
import { openAiCompatibleModel, type ProviderSettings } from './openai-compatible-spec.js';
import { scriptedModel, type ScriptedReply } from './scripted-model.js';
import { messageOf } from '../protocol/error-message.js';

export type { ProviderSettings };

/** A host's `--model` value: which model port to run, and how to describe it in the startup log. */
export interface ModelChoice {
  model: ModelPort;
  description: string;
}

const tokens = z.number().int().nonnegative();

const replySchema = z.union([
  z.object({ error: z.enum(['provider', 'overflow', 'protocol']), message: z.string().optional() }).strict(),
  z
    .object({
      text: z.string().optional(),
      reasoning: z.string().optional(),
      toolCalls: z.array(z.object({ name: z.string().min(1), args: z.unknown().optional(), id: z.string().min(1).optional() }).strict()).optional(),
      usage: z
        .object({ inputTokens: tokens, outputTokens: tokens, cachedInputTokens: tokens, reasoningTokens: tokens })
        .partial()
        .strict()
        .optional(),
    })
    .strict(),
]);

const scriptSchema = z.array(replySchema);

/**
 * `openai-compatible:BASE_URL#MODEL` — a real provider (see `openAiCompatibleModel`), configured by
 * `settings`. `scripted:FILE` — a JSON array of replies (`{ text?, reasoning?, toolCalls?: [{ name,
 * args, id? }], usage? }` or `{ error }`), one per model call in order across the host; when it runs
 * out the call fails `model_error`. No spec: the demo model.
 */
export async function modelFromSpec(spec: string | undefined, settings: ProviderSettings = {}): Promise<ModelChoice> {
  if (spec === undefined || spec === '') return { model: demoModel(), description: 'the demo model (scripted; set --model to use another)' };
  const [scheme, ...rest] = spec.split(':');
  const target = rest.join(':');
  if (scheme === 'openai-compatible' && target !== '') return openAiCompatibleModel(target, settings);
  if (scheme === 'scripted' && target !== '') {
    const steps = await readScript(target);
    const options = settings.capabilities ? { capabilities: settings.capabilities } : {};
    return { model: scriptedModel(steps as ScriptedReply[], options), description: `a scripted model (${steps.length} replies from ${target})` };
  }
  throw new TurnchartError('InvalidOptions', `unknown --model '${spec}': expected openai-compatible:BASE_URL#MODEL or scripted:FILE`);
}

async function readScript(file: string): Promise<z.infer<typeof scriptSchema>> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    throw new TurnchartError('InvalidOptions', `cannot read the model script ${file}: ${messageOf(error)}`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new TurnchartError('InvalidOptions', `the model script ${file} is not JSON: ${messageOf(error)}`);
  }
  const script = scriptSchema.safeParse(parsed);
  if (!script.success) throw new TurnchartError('InvalidOptions', `the model script ${file} is not a list of replies: ${z.prettifyError(script.error)}`);
  return script.data;
}
