import { z } from 'zod';
import type { Runtime } from '../runtime/runtime.js';
import { otelSpans } from '../telemetry/otel-spans.js';
import { startOtelSdk } from '../telemetry/otel-sdk.js';

/** Issue 27: the OpenTelemetry switches of `serve` and `worker`, each also a variable and a file key. */
export const OTEL_FLAGS = {
  otel: {
    env: 'TURNCHART_OTEL',
    switch: true,
    help: 'export traces over OTLP with the GenAI conventions, configured by OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_PROTOCOL, OTEL_SERVICE_NAME, … (needs the optional @opentelemetry/sdk-node; default off)',
  },
  'otel-content': {
    env: 'TURNCHART_OTEL_CONTENT',
    switch: true,
    help: 'with --otel: record model messages, tool arguments and results in the spans, secrets redacted, bounded (default off)',
  },
} as const;

/** `on`/`off` (also `1`/`0`, `true`/`false`): what `--otel` alone, its variable and its file key say. */
const switchSchema = z
  .enum(['on', 'off', '1', '0', 'true', 'false'], { error: 'on or off' })
  .transform((value) => value === 'on' || value === '1' || value === 'true');

export const otelSettingsSchema = {
  otel: switchSchema.default(false),
  'otel-content': switchSchema.default(false),
};

interface OtelSettings {
  otel: boolean;
  'otel-content': boolean;
}

/** Content without export is a mistake worth saying at start, not a setting silently ignored. */
export function otelSettingsProblem(settings: OtelSettings, sourceOf: (flag: string) => string): string | null {
  return settings['otel-content'] && !settings.otel ? `${sourceOf('otel-content')}: records content in the spans --otel exports; set ${sourceOf('otel')} too` : null;
}

/**
 * Starts what `start` starts with OpenTelemetry's SDK running (when `--otel` is on): the SDK first,
 * so a missing one stops the start before anything opens, and shut down — its last spans exported —
 * after what was started has closed, or when it failed to start. `observe` attaches the span
 * exporter to the runtime it started (the host attaches its own, through `HostOptions.otel`).
 */
export async function withOtel<T extends { close(): Promise<void> }>(
  settings: OtelSettings,
  serviceName: string,
  start: () => Promise<T>,
  observe?: (started: T) => Runtime,
): Promise<T> {
  if (!settings.otel) return start();
  const sdk = await startOtelSdk({ defaultServiceName: serviceName });
  let started: T;
  try {
    started = await start();
  } catch (error) {
    await sdk.shutdown().catch(() => undefined);
    throw error;
  }
  const exporter = observe ? otelSpans(observe(started), { recordContent: settings['otel-content'] }) : null;
  const close = started.close.bind(started);
  started.close = async () => {
    try {
      await close();
    } finally {
      exporter?.stop();
      await sdk.shutdown();
    }
  };
  return started;
}
