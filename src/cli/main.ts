#!/usr/bin/env node
/** The `turnchart` command: argument parsing and wiring only. */
import { chatSettings, chatUsage, runChat } from './chat.js';
import { hideSecretArguments } from './process-title.js';
import { SECRET_FLAGS, serve, serveLogger, serveSettings, serveUsage } from './serve.js';
import { runSubmit, submitLogger, submitSettings, submitUsage } from './submit.js';
import { runWorker, workerLogger, workerSettings, workerUsage } from './worker.js';
import type { Logger } from 'pino';
import type { RunningHost } from '../host/host.js';
import { messageOf } from '../protocol/error-message.js';
import { TurnchartError } from '../protocol/errors.js';
import { ConfigError, configPathOf, loadConfigFile, type LoadedConfig } from './config-file.js';

const USAGE = [
  'Usage: turnchart <command> [options]',
  '',
  'Commands:',
  '  serve    run the HTTP service (the default)',
  '  chat     chat in the terminal, with a running host or embedded',
  '  worker   run tasks from RabbitMQ',
  '  submit   submit a task for the workers',
  '',
  serveUsage(),
  '',
  chatUsage(),
  '',
  workerUsage(),
  '',
  submitUsage(),
].join('\n');

async function main(argv: string[]): Promise<number> {
  const [command = 'serve', ...rest] = argv[0]?.startsWith('-') ? ['serve', ...argv] : argv;
  if (command === 'help' || rest.includes('--help') || rest.includes('-h')) {
    const named = argv[0] === command; // `turnchart --help` names no command
    const usages: Record<string, () => string> = { chat: chatUsage, serve: serveUsage, worker: workerUsage, submit: submitUsage };
    console.log(named && Object.hasOwn(usages, command) ? usages[command]!() : USAGE);
    return 0;
  }
  if (command === 'chat') return chat(rest);
  if (command === 'worker') return worker(rest);
  if (command === 'submit') return submit(rest);
  if (command !== 'serve') {
    console.error(`turnchart: unknown command '${command}'\n\n${USAGE}`);
    return 2;
  }
  let settings;
  let file: LoadedConfig | null;
  try {
    file = await configFile(rest);
    settings = serveSettings(rest, process.env, file);
  } catch (error) {
    return refuse(error, serveUsage);
  }
  hideSecretArguments('serve', rest, SECRET_FLAGS);
  // From here on everything the host says is a log line, in the format its settings chose (issue 27);
  // a line about a turn names its trace once the host (and its exporter, with --otel) is up.
  let host: RunningHost | undefined;
  const log = serveLogger(settings, (turnId) => host?.otel?.traceIdOf(turnId));
  try {
    host = await serve(settings, log, file);
  } catch (error) {
    // What the file names is checked before anything starts: its mistakes are the user's, not a crash.
    return failed(log, error);
  }
  // The line scripts wait for, on stdout as before; the log says it too, for whoever reads only the log.
  console.log(`turnchart listening on ${host.url}`);
  log.info({ url: host.url }, `listening on ${host.url}`);
  if (host.metricsUrl) log.info({ url: host.metricsUrl }, `metrics on ${host.metricsUrl}`);
  await untilSignalled(() => host.close(), log);
  log.info('stopped');
  return 0;
}

/**
 * A command that failed once its log exists: said there, exit code 2 for the configuration's mistakes,
 * 1 for the rest. A typed refusal (a sandbox that cannot be had) is its message; anything else a defect, with its stack.
 */
function failed(log: Logger, error: unknown): number {
  if (error instanceof ConfigError) {
    log.fatal(error.message);
    return 2;
  }
  log.fatal(error instanceof TurnchartError ? {} : { err: error }, messageOf(error));
  return 1;
}

/** The configuration file the arguments, the environment or the working directory name, loaded; null when there is none. */
async function configFile(args: string[]): Promise<LoadedConfig | null> {
  const located = configPathOf(args, process.env);
  return located ? loadConfigFile(located.name, located.path) : null;
}

/** A start refused for a bad flag (with the usage) or a bad configuration file (without): exit code 2. */
function refuse(error: unknown, usage: () => string): number {
  console.error(error instanceof ConfigError ? `turnchart: ${error.message}` : `turnchart: ${messageOf(error)}\n\n${usage()}`);
  return 2;
}

async function worker(args: string[]): Promise<number> {
  let settings;
  let file: LoadedConfig | null;
  try {
    file = await configFile(args);
    settings = workerSettings(args, process.env, file);
  } catch (error) {
    return refuse(error, workerUsage);
  }
  const log = workerLogger(settings);
  let running;
  try {
    running = await runWorker(settings, log, file);
  } catch (error) {
    return failed(log, error);
  }
  console.log(`turnchart worker ready (owner ${running.ownerId})`);
  log.info({ ownerId: running.ownerId }, `ready (owner ${running.ownerId})`);
  await untilSignalled(() => running.close(), log);
  log.info('stopped');
  return 0;
}

async function submit(args: string[]): Promise<number> {
  let settings;
  try {
    settings = submitSettings(args, process.env);
  } catch (error) {
    console.error(`turnchart: ${messageOf(error)}\n\n${submitUsage()}`);
    return 2;
  }
  const log = submitLogger(settings);
  try {
    // stdout holds only the task, as JSON: what a script reads.
    console.log(await runSubmit(settings, log));
  } catch (error) {
    return failed(log, error);
  }
  return 0;
}

/** Waits for SIGINT or SIGTERM, then closes cleanly; a second signal exits at once (the log is written synchronously: nothing said is lost). */
function untilSignalled(close: () => Promise<void>, log: Logger): Promise<void> {
  return new Promise<void>((resolve) => {
    let signals = 0;
    const stop = (signal: string) => {
      signals += 1;
      if (signals > 1) process.exit(130);
      log.info(`${signal}, shutting down`);
      void close().then(resolve, (error: unknown) => {
        log.error({ err: error }, `shutdown failed: ${messageOf(error)}`);
        resolve();
      });
    };
    process.on('SIGINT', () => stop('SIGINT'));
    process.on('SIGTERM', () => stop('SIGTERM'));
  });
}

async function chat(args: string[]): Promise<number> {
  let settings;
  let file: LoadedConfig | null;
  try {
    // Against a host (--url) the host's own configuration counts, not a file here.
    settings = chatSettings(args, process.env);
    file = settings.url ? null : await configFile(args);
    if (file) settings = chatSettings(args, process.env, file);
  } catch (error) {
    return refuse(error, chatUsage);
  }
  const code = await runChat(settings, { input: process.stdin, output: process.stdout, env: process.env }, file);
  // Nothing is left to wait for once the chat is over (an idle keep-alive socket, a timer of the runtime).
  await new Promise<void>((flushed) => process.stdout.write('', () => flushed()));
  process.exit(code);
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    console.error(`turnchart: ${messageOf(error)}`);
    process.exitCode = 1;
  },
);
