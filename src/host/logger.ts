import { pino, type Logger } from 'pino';
import { prettyFactory } from 'pino-pretty';
import { z } from 'zod';
import type { LogFields, Warn } from '../protocol/log-fields.js';
import { secretScrubber } from './log-secrets.js';
import { traceFields, type TraceIdOf } from './log-trace.js';

/**
 * Issue 27: the log of `turnchart serve`, `worker` and `submit` — pino, one line per entry on
 * stderr (stdout is the commands' own output: the listening line, a submitted task), each with
 * `level`, `time`, `msg`, the process's `name`, and `sessionId` / `turnId` / `taskId` / `trace_id`
 * when the line is about one.
 */

export const logFormatSchema = z.enum(['json', 'pretty']);
export type LogFormat = z.infer<typeof logFormatSchema>;

export const logLevelSchema = z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']);
export type LogLevel = z.infer<typeof logLevelSchema>;

/** Pretty on a terminal, where a person reads the lines; JSON anywhere else, where a collector parses them. */
export function defaultLogFormat(stderr: { isTTY?: boolean } = process.stderr): LogFormat {
  return stderr.isTTY === true ? 'pretty' : 'json';
}

/** Where the lines go: anything with a synchronous `write` of one whole line (a test's buffer). */
interface LogDestination {
  write(line: string): unknown;
}

export interface LoggerOptions {
  /** The program, as every line names it: `turnchart`, `turnchart worker`. */
  name: string;
  format: LogFormat;
  level?: LogLevel;
  /** The trace of an open turn, when OpenTelemetry is on: lines about that turn carry its `trace_id`. */
  traceIdOf?: TraceIdOf;
  /** Values masked wherever they appear in a line (tokens, keys, URLs with passwords). */
  secrets?: readonly (string | null | undefined)[];
  /** Default: stderr, written synchronously. */
  destination?: LogDestination;
  /** Colours in the pretty format; default: when the destination is stderr and stderr is a terminal. */
  colorize?: boolean;
}

/** Fields that hold a secret whatever their value, wherever a caller puts them: masked by name (defence in depth). */
const REDACTED_FIELDS = ['token', 'apiKey', 'password', 'secret', 'jwtSecret', 'authorization', 'cookie', 'databaseUrl', 'amqpUrl'];

export function createLogger(options: LoggerOptions): Logger {
  const scrub = secretScrubber(options.secrets ?? []);
  // Synchronous, as pino's own destination can be: a short-lived process, a SIGTERM or an exit loses no line.
  const out = options.destination ?? pino.destination({ dest: 2, sync: true });
  const colorize = options.colorize ?? (options.destination === undefined && process.stderr.isTTY === true);
  // pino-pretty's formatter itself, in this thread: its transport would run it in a worker that exit can outpace.
  const render = options.format === 'pretty' ? prettyFactory({ colorize, singleLine: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' }) : (line: string) => line;
  return pino(
    {
      name: options.name,
      level: options.level ?? 'info',
      // Levels by name and times in ISO 8601: a line read by a person or a collector needs no table.
      formatters: { level: (label) => ({ level: label }) },
      timestamp: pino.stdTimeFunctions.isoTime,
      redact: { paths: [...REDACTED_FIELDS, ...REDACTED_FIELDS.map((field) => `*.${field}`)], censor: '[redacted]' },
      mixin: (fields) => traceFields(fields, options.traceIdOf),
    },
    { write: (line: string) => void out.write(render(scrub(line))) },
  );
}

/** A `warn` that writes to the logger at `warn`: the ids as fields, the error as `err`. */
export function warnTo(logger: Logger): Warn {
  return (message, fields) => logger.warn(logFieldsOf(fields), message);
}

/** The fields of a line: the ids as they are, an error under pino's `err` (serialized with its type and stack). */
function logFieldsOf(fields: LogFields | undefined): Record<string, unknown> {
  if (!fields) return {};
  const { error, ...ids } = fields;
  return error === undefined ? ids : { ...ids, err: error };
}
