/**
 * Every process of the machine can read another's command line (`/proc/PID/cmdline`, `ps`), and a
 * command the host's tools ran did (`cat /proc/$PPID/cmdline`: issue 22, finding 5). Setting
 * `process.title` has libuv write the title over the memory the kernel shows as the command line
 * (on Linux; the title is cut to the length of the original), so once the flags are read the
 * command line is shown again with the values of `secretFlags` replaced by `***`. Processes that
 * started this one (`npm start`, the `tsx` wrapper) keep their own copy: a secret belongs in the
 * environment or a file, not among the arguments.
 */
export function hideSecretArguments(command: string, args: readonly string[], secretFlags: readonly string[]): void {
  process.title = ['turnchart', command, ...withoutSecrets(args, secretFlags)].join(' ');
}

function withoutSecrets(args: readonly string[], secretFlags: readonly string[]): string[] {
  const secret = new Set(secretFlags.map((flag) => `--${flag}`));
  return args.map((arg, at) => {
    const [name] = arg.split('=', 1);
    if (secret.has(name!) && arg.includes('=')) return `${name}=***`;
    return at > 0 && secret.has(args[at - 1]!) ? '***' : arg;
  });
}
