#!/usr/bin/env node
/** The `turnchart` command: argument parsing and wiring only. */
import { chatSettings, chatUsage, runChat } from './chat.js';
import { hideSecretArguments } from './process-title.js';
import { SECRET_FLAGS, serve, serveSettings, serveUsage } from './serve.js';
import { runSubmit, submitSettings, submitUsage } from './submit.js';
import { runWorker, workerSettings, workerUsage } from './worker.js';
import { messageOf } from '../protocol/error-message.js';

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
  try {
    settings = serveSettings(rest, process.env);
  } catch (error) {
    console.error(`turnchart: ${messageOf(error)}\n\n${serveUsage()}`);
    return 2;
  }
  hideSecretArguments('serve', rest, SECRET_FLAGS);
  const host = await serve(settings, (line) => console.log(line));
  console.log(`turnchart listening on ${host.url}`);
  await new Promise<void>((resolve) => {
    let signals = 0;
    const stop = (signal: string) => {
      signals += 1;
      if (signals > 1) process.exit(130); // a second signal: do not wait for the clean shutdown
      console.log(`turnchart: ${signal}, shutting down`);
      void host.close().then(resolve, (error: unknown) => {
        console.error('turnchart: shutdown failed:', error);
        resolve();
      });
    };
    process.on('SIGINT', () => stop('SIGINT'));
    process.on('SIGTERM', () => stop('SIGTERM'));
  });
  console.log('turnchart: stopped');
  return 0;
}

async function worker(args: string[]): Promise<number> {
  let settings;
  try {
    settings = workerSettings(args, process.env);
  } catch (error) {
    console.error(`turnchart: ${messageOf(error)}\n\n${workerUsage()}`);
    return 2;
  }
  const running = await runWorker(settings, (line) => console.log(line));
  console.log(`turnchart worker ready (owner ${running.ownerId})`);
  await untilSignalled(() => running.close(), 'turnchart worker');
  console.log('turnchart worker: stopped');
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
  console.log(await runSubmit(settings));
  return 0;
}

/** Waits for SIGINT or SIGTERM, then closes cleanly; a second signal exits at once. */
function untilSignalled(close: () => Promise<void>, name: string): Promise<void> {
  return new Promise<void>((resolve) => {
    let signals = 0;
    const stop = (signal: string) => {
      signals += 1;
      if (signals > 1) process.exit(130);
      console.log(`${name}: ${signal}, shutting down`);
      void close().then(resolve, (error: unknown) => {
        console.error(`${name}: shutdown failed:`, error);
        resolve();
      });
    };
    process.on('SIGINT', () => stop('SIGINT'));
    process.on('SIGTERM', () => stop('SIGTERM'));
  });
}

async function chat(args: string[]): Promise<number> {
  let settings;
  try {
    settings = chatSettings(args, process.env);
  } catch (error) {
    console.error(`turnchart: ${messageOf(error)}\n\n${chatUsage()}`);
    return 2;
  }
  const code = await runChat(settings, { input: process.stdin, output: process.stdout, env: process.env });
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
