import { describe, expect, it } from 'vitest';
import { commandEnvFlagSchema, commandEnvironment } from '../../src/tools/sandbox/command-environment.js';

const HOST = {
  PATH: '/usr/bin:/bin',
  HOME: '/home/agent',
  LANG: 'C.UTF-8',
  LC_ALL: 'C.UTF-8',
  TERM: 'xterm',
  SHELL: '/bin/bash',
  TURNCHART_API_KEY: 'sk-host-key-123456',
  TURNCHART_TOKEN: 'host-token-123456',
  TURNCHART_PORT: '4477',
  DATABASE_URL: 'postgres://app:pw-123456@db/app',
  FOO_API_KEY: 'foo-key',
  MY_SECRET: 'shh',
  BROKER: 'amqp://u:p@mq',
  GITHUB_TOKEN: 'gh-token',
  NPM_CONFIG_REGISTRY: 'https://registry.example',
};

describe('commandEnvironment', () => {
  it('passes the baseline (PATH, HOME, LANG, LC_*, TERM) and nothing else unless named', () => {
    const { env, warnings } = commandEnvironment({ hostEnv: HOST });
    expect(env).toEqual({ PATH: '/usr/bin:/bin', HOME: '/home/agent', LANG: 'C.UTF-8', LC_ALL: 'C.UTF-8', TERM: 'xterm' });
    expect(warnings).toEqual([]);
  });

  it('gives a PATH when the host has none', () => {
    expect(commandEnvironment({ hostEnv: {} }).env.PATH).toMatch(/\/usr\/bin/);
  });

  it('passes a named variable; one that looks like a credential passes with a warning', () => {
    const { env, warnings } = commandEnvironment({ hostEnv: HOST, pass: ['NPM_CONFIG_REGISTRY', 'GITHUB_TOKEN', 'FOO_API_KEY', 'MY_SECRET', 'BROKER'] });
    expect(env).toMatchObject({ NPM_CONFIG_REGISTRY: 'https://registry.example', GITHUB_TOKEN: 'gh-token', FOO_API_KEY: 'foo-key', MY_SECRET: 'shh', BROKER: 'amqp://u:p@mq' });
    expect(warnings.map((w) => /passing (\w+)/.exec(w)?.[1])).toEqual(['GITHUB_TOKEN', 'FOO_API_KEY', 'MY_SECRET', 'BROKER']);
  });

  it('never passes the host\'s own settings and secrets, even when named', () => {
    for (const name of ['TURNCHART_API_KEY', 'TURNCHART_PORT', 'turnchart_token', 'DATABASE_URL', 'RUN_COMMAND_ID']) {
      expect(() => commandEnvironment({ hostEnv: HOST, pass: [name] }), name).toThrow(expect.objectContaining({ code: 'InvalidWorkspaceOptions' }));
    }
  });

  it('never passes a value holding one of the host\'s secrets, from its environment or given', () => {
    const hostEnv = { ...HOST, KEY_COPY: 'sk-host-key-123456', AUTH_HEADER: 'Bearer host-token-123456', PLAIN: 'from-flag-999999' };
    expect(() => commandEnvironment({ hostEnv, pass: ['KEY_COPY'] })).toThrow(/KEY_COPY is never passed/);
    expect(() => commandEnvironment({ hostEnv, pass: ['AUTH_HEADER'] })).toThrow(/AUTH_HEADER is never passed/);
    expect(() => commandEnvironment({ hostEnv, pass: ['PLAIN'], secrets: ['from-flag-999999', null] })).toThrow(/PLAIN is never passed/);
    // A baseline variable holding a secret is left out, with a warning.
    const leaky = commandEnvironment({ hostEnv: { ...HOST, TERM: 'host-token-123456' } });
    expect(leaky.env.TERM).toBeUndefined();
    expect(leaky.warnings).toEqual([expect.stringContaining('TERM is not passed')]);
  });

  it('warns about a named variable the host does not have, and refuses a malformed name', () => {
    expect(commandEnvironment({ hostEnv: HOST, pass: ['NOT_THERE'] }).warnings).toEqual([expect.stringContaining('NOT_THERE is not set')]);
    expect(() => commandEnvironment({ hostEnv: HOST, pass: ['A=B'] })).toThrow(expect.objectContaining({ code: 'InvalidWorkspaceOptions' }));
  });
});

describe('--command-env values', () => {
  it('are repeatable and comma-separated, blanks dropped, names checked', () => {
    expect(commandEnvFlagSchema.parse('A,B , ,C')).toEqual(['A', 'B', 'C']);
    expect(commandEnvFlagSchema.parse(['A,B', 'C'])).toEqual(['A', 'B', 'C']);
    expect(commandEnvFlagSchema.safeParse('A,B-C').success).toBe(false);
    expect(commandEnvFlagSchema.safeParse('1A').success).toBe(false);
  });
});
