import type { Logger } from 'pino';
import { createLogger, defaultLogFormat, logFormatSchema, logLevelSchema, type LogFormat, type LogLevel } from '../host/logger.js';
import type { TraceIdOf } from '../host/log-trace.js';

/** Issue 27: the log flags every long-running command takes (serve, worker, submit), each also a variable and a file key. */
export const LOG_FLAGS = {
  'log-format': { env: 'TURNCHART_LOG_FORMAT', help: 'json (one JSON object a line) or pretty (default: pretty when stderr is a terminal, else json)' },
  'log-level': { env: 'TURNCHART_LOG_LEVEL', help: 'fatal, error, warn, info, debug, trace or silent (default info)' },
} as const;

export const logSettingsSchema = {
  'log-format': logFormatSchema.optional(),
  'log-level': logLevelSchema.default('info'),
};

interface LogSettings {
  'log-format'?: LogFormat | undefined;
  'log-level': LogLevel;
}

/** The command's logger from its settings, masking its secrets wherever they would appear. */
export function loggerOf(settings: LogSettings, name: string, secrets: readonly (string | null | undefined)[], traceIdOf?: TraceIdOf): Logger {
  return createLogger({
    name,
    format: settings['log-format'] ?? defaultLogFormat(),
    level: settings['log-level'],
    secrets,
    ...(traceIdOf && { traceIdOf }),
  });
}
