import { ROOT_CONTEXT, context, trace, TraceFlags, type Context, type ContextManager } from '@opentelemetry/api';
import { afterEach, describe, expect, it } from 'vitest';
import { serveSettings } from '../../src/cli/serve.js';
import { workerSettings } from '../../src/cli/worker.js';
import { createLogger, defaultLogFormat, warnTo, type LoggerOptions } from '../../src/host/logger.js';
import type { LogLine } from '../support/log-lines.js';

/** A logger writing into memory, and its lines. */
function captured(options: Partial<LoggerOptions> = {}) {
  const written: string[] = [];
  const logger = createLogger({ name: 'turnchart', format: 'json', ...options, destination: { write: (line) => written.push(line) } });
  return { logger, written, lines: () => written.map((line) => JSON.parse(line) as LogLine) };
}

/**
 * The smallest context manager there is: `with` makes a context active for a synchronous call.
 * Enough to stand for an OpenTelemetry SDK's (which would bring async hooks) in these tests.
 */
class StackContextManager implements ContextManager {
  private stack: Context[] = [];
  active(): Context {
    return this.stack.at(-1) ?? ROOT_CONTEXT;
  }
  with<A extends unknown[], F extends (...args: A) => ReturnType<F>>(ctx: Context, fn: F, thisArg?: ThisParameterType<F>, ...args: A): ReturnType<F> {
    this.stack.push(ctx);
    try {
      return fn.call(thisArg, ...args);
    } finally {
      this.stack.pop();
    }
  }
  bind<T>(_ctx: Context, target: T): T {
    return target;
  }
  enable(): this {
    return this;
  }
  disable(): this {
    this.stack = [];
    return this;
  }
}

describe('the log (issue 27): pino, one JSON object a line', () => {
  afterEach(() => context.disable());

  it('each line has level (by name), time (ISO 8601), msg and the program name', () => {
    const { logger, written, lines } = captured();
    logger.info('model: the demo model');
    logger.warn('something odd');
    logger.debug('not at info');
    expect(written).toHaveLength(2);
    for (const line of written) expect(line.endsWith('\n') && line.indexOf('\n') === line.length - 1).toBe(true);
    expect(lines()).toEqual([
      expect.objectContaining({ level: 'info', msg: 'model: the demo model', name: 'turnchart' }),
      expect.objectContaining({ level: 'warn', msg: 'something odd', name: 'turnchart' }),
    ]);
    for (const line of lines()) expect(new Date(line.time).toISOString()).toBe(line.time);
  });

  it('warn(message, fields) puts the session, turn and task ids on the line, and an error under err; one argument still works', () => {
    const { logger, lines } = captured();
    const warn = warnTo(logger);
    warn('session s_1 is now held by another owner; closing it here', { sessionId: 's_1' });
    warn('a world-state warning', { sessionId: 's_2', turnId: 'turn_2' });
    warn('task t_3: cleanup after abort failed', { taskId: 't_3', sessionId: 's_3', error: new Error('gone') });
    warn('no ids');
    const [held, turn, task, plain] = lines();
    expect(held).toMatchObject({ level: 'warn', sessionId: 's_1' });
    expect(held).not.toHaveProperty('turnId');
    expect(turn).toMatchObject({ sessionId: 's_2', turnId: 'turn_2' });
    expect(task).toMatchObject({ taskId: 't_3', sessionId: 's_3', err: { type: 'Error', message: 'gone' } });
    expect(plain).toMatchObject({ msg: 'no ids' });
    expect(Object.keys(plain!).filter((key) => /Id$|trace/.test(key))).toEqual([]);
  });

  it("a line about a turn carries the turn's trace_id from traceIdOf; other lines, and turns it does not know, none", () => {
    const asked: string[] = [];
    const { logger, lines } = captured({ traceIdOf: (turnId) => (asked.push(turnId), turnId === 'turn_open' ? '4bf92f3577b34da6a3ce929d0e0e4736' : undefined) });
    const warn = warnTo(logger);
    warn('about an open turn', { sessionId: 's', turnId: 'turn_open' });
    warn('about a turn the exporter has closed', { sessionId: 's', turnId: 'turn_gone' });
    warn('about a session', { sessionId: 's' });
    const [open, gone, session] = lines();
    expect(open).toMatchObject({ turnId: 'turn_open', trace_id: '4bf92f3577b34da6a3ce929d0e0e4736' });
    expect(gone).not.toHaveProperty('trace_id');
    expect(session).not.toHaveProperty('trace_id');
    expect(asked).toEqual(['turn_open', 'turn_gone']);
  });

  it('without a turn, the span active where the line is written gives trace_id, span_id and trace_flags; without OpenTelemetry, nothing', () => {
    const { logger, lines } = captured();
    logger.info('no OpenTelemetry');
    context.setGlobalContextManager(new StackContextManager());
    const span = trace.wrapSpanContext({ traceId: '0af7651916cd43dd8448eb211c80319c', spanId: 'b7ad6b7169203331', traceFlags: TraceFlags.SAMPLED });
    context.with(trace.setSpan(context.active(), span), () => logger.info('inside a span'));
    logger.info('outside it');
    const [none, inside, outside] = lines();
    expect(none).not.toHaveProperty('trace_id');
    expect(inside).toMatchObject({ trace_id: '0af7651916cd43dd8448eb211c80319c', span_id: 'b7ad6b7169203331', trace_flags: '01' });
    expect(outside).not.toHaveProperty('trace_id');
  });

  it('secrets never reach a line: known values anywhere (message, error, fields), every URL password, and secret-named fields', () => {
    const token = 'tok-0123456789abcdef';
    const { logger, written, lines } = captured({ secrets: [token, 'postgres://app:s3cr3t-pass@db:5432/turnchart', 'short', undefined] });
    const warn = warnTo(logger);
    warn(`request failed: bad header Bearer ${token}`, { sessionId: 's', error: new Error(`refused ${token}`) });
    logger.info('database postgres://app:s3cr3t-pass@db:5432/turnchart, broker amqp://guest:guest@127.0.0.1:5672');
    logger.info({ token: 'x', apiKey: 'y', headers: { authorization: 'Bearer z' } }, 'fields');
    logger.info('a short secret is not looked for: short');
    const text = written.join('');
    expect(text).not.toContain(token);
    expect(text).not.toContain('s3cr3t-pass');
    expect(text).not.toContain('guest:guest');
    const [request, urls, fields, short] = lines();
    expect(request).toMatchObject({ msg: 'request failed: bad header Bearer ***', err: { message: 'refused ***' } });
    expect(urls!.msg).toBe('database postgres://app:***@db:5432/turnchart, broker amqp://guest:***@127.0.0.1:5672');
    expect(fields).toMatchObject({ token: '[redacted]', apiKey: '[redacted]', headers: { authorization: '[redacted]' } });
    expect(short!.msg).toContain('short');
  });

  it('pretty: one readable line an entry, not JSON, with the level, the message and the ids', () => {
    const { logger, written } = captured({ format: 'pretty', colorize: false });
    logger.info('model: the demo model');
    warnTo(logger)('skill broken: no SKILL.md', { sessionId: 's_9', turnId: 'turn_9' });
    expect(written).toHaveLength(2);
    for (const line of written) expect(() => JSON.parse(line) as unknown).toThrow();
    expect(written[0]).toMatch(/INFO.*\(turnchart\): model: the demo model\n$/);
    expect(written[1]).toMatch(/WARN.*skill broken: no SKILL\.md.*"sessionId":"s_9".*"turnId":"turn_9"/);
  });

  it('the format defaults to pretty on a terminal and JSON otherwise; --log-format, TURNCHART_LOG_FORMAT and --log-level are checked', () => {
    expect(defaultLogFormat({ isTTY: true })).toBe('pretty');
    expect(defaultLogFormat({})).toBe('json');
    expect(serveSettings([], {})['log-format']).toBeUndefined();
    expect(serveSettings([], {})['log-level']).toBe('info');
    expect(serveSettings(['--log-format', 'pretty'], { TURNCHART_LOG_FORMAT: 'json' })['log-format']).toBe('pretty');
    expect(serveSettings([], { TURNCHART_LOG_FORMAT: 'json', TURNCHART_LOG_LEVEL: 'debug' })).toMatchObject({ 'log-format': 'json', 'log-level': 'debug' });
    expect(() => serveSettings(['--log-format', 'xml'], {})).toThrow(/--log-format \(TURNCHART_LOG_FORMAT\)/);
    expect(() => workerSettings(['--log-level', 'loud'], { TURNCHART_AMQP_URL: 'amqp://127.0.0.1' })).toThrow(/--log-level \(TURNCHART_LOG_LEVEL\)/);
  });
});
