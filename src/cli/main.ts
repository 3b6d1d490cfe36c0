#!/usr/bin/env node
/** The `turnchart` command: argument parsing and wiring only. */
import { serve, serveSettings, serveUsage } from './serve.js';

const USAGE = ['Usage: turnchart <command> [options]', '', 'Commands:', '  serve    run the HTTP service (the default)', '', serveUsage()].join('\n');

async function main(argv: string[]): Promise<number> {
  const [command = 'serve', ...rest] = argv[0]?.startsWith('-') ? ['serve', ...argv] : argv;
  if (command === 'help' || rest.includes('--help') || rest.includes('-h')) {
    console.log(USAGE);
    return 0;
  }
  if (command !== 'serve') {
    console.error(`turnchart: unknown command '${command}'\n\n${USAGE}`);
    return 2;
  }
  let settings;
  try {
    settings = serveSettings(rest, process.env);
  } catch (error) {
    console.error(`turnchart: ${error instanceof Error ? error.message : String(error)}\n\n${serveUsage()}`);
    return 2;
  }
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

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    console.error(`turnchart: ${error instanceof Error ? error.message : String(error)}`);
    process.exitCode = 1;
  },
);
