import { TurnchartError } from '../protocol/errors.js';
import { messageOf } from '../protocol/error-message.js';

/**
 * Issue 27: `--otel` starts OpenTelemetry's Node SDK, configured as every OpenTelemetry program is —
 * by the standard variables: `OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`),
 * `OTEL_EXPORTER_OTLP_PROTOCOL` (`http/protobuf` by default, `http/json`, `grpc`), `OTEL_EXPORTER_OTLP_HEADERS`,
 * `OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`, `OTEL_TRACES_SAMPLER`, `OTEL_BSP_*`, …
 *
 * The SDK is an optional dependency, loaded only here and only then: a host without `--otel` never
 * loads it, and one installed without it says what to install. The module's name is not written as
 * a literal import, so no bundler pulls it in where it is not wanted.
 */
const SDK_MODULE = '@opentelemetry/sdk-node';

/** The SDK could not be loaded or started. */
export class OtelUnavailableError extends TurnchartError {
  constructor(message: string, cause?: unknown) {
    super('OtelUnavailable', message, { cause });
    this.name = 'OtelUnavailableError';
  }
}

/** A started SDK; `shutdown()` exports what is buffered and stops it (a second call does nothing). */
export interface OtelSdk {
  shutdown(): Promise<void>;
}

/** The part of `@opentelemetry/sdk-node` used here, checked as it loads (the package is not a compile-time dependency). */
interface NodeSdkModule {
  NodeSDK: new (configuration: Record<string, unknown>) => { start(): void; shutdown(): Promise<void> };
}

export interface OtelSdkOptions {
  /** `service.name` when neither `OTEL_SERVICE_NAME` nor `OTEL_RESOURCE_ATTRIBUTES` names one. */
  defaultServiceName: string;
  /** Loads the SDK module (tests pass a missing one). */
  load?: (name: string) => Promise<unknown>;
}

export async function startOtelSdk(options: OtelSdkOptions): Promise<OtelSdk> {
  const env = process.env;
  const load = options.load ?? ((name: string) => import(name) as Promise<unknown>);
  let loaded: unknown;
  try {
    loaded = await load(SDK_MODULE);
  } catch (error) {
    throw new OtelUnavailableError(
      `--otel needs the optional dependency ${SDK_MODULE}, which could not be loaded (${messageOf(error)}); install it with: npm install ${SDK_MODULE}`,
      error,
    );
  }
  const { NodeSDK } = (loaded ?? {}) as Partial<NodeSdkModule>;
  if (typeof NodeSDK !== 'function') throw new OtelUnavailableError(`${SDK_MODULE} has no NodeSDK: a version of 0.200 or later is needed`);
  const named = Boolean(env.OTEL_SERVICE_NAME) || /(^|,)\s*service\.name\s*=/.test(env.OTEL_RESOURCE_ATTRIBUTES ?? '');
  const sdk = new NodeSDK({
    ...(!named && { serviceName: options.defaultServiceName }),
    // Traces are what `--otel` is for: the SDK's OTLP metrics and logs (on by default) only when their variables ask for them.
    ...(!env.OTEL_METRICS_EXPORTER && { metricReaders: [] }),
    ...(!env.OTEL_LOGS_EXPORTER && { logRecordProcessors: [] }),
  });
  try {
    sdk.start();
  } catch (error) {
    throw new OtelUnavailableError(`the OpenTelemetry SDK could not start: ${messageOf(error)}`, error);
  }
  let stopping: Promise<void> | null = null;
  return { shutdown: () => (stopping ??= sdk.shutdown()) };
}
