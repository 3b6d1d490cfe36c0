/** One line of a `turnchart` process's JSON log (issue 27). */
export interface LogLine {
  level: string;
  time: string;
  msg: string;
  name?: string;
  sessionId?: string;
  turnId?: string;
  taskId?: string;
  [field: string]: unknown;
}

/**
 * The JSON log lines in what a process printed; what is not one (stdout's listening line, in an
 * output that mixes both streams) is left out. A line that starts as JSON but does not parse throws.
 */
export function logLines(output: string): LogLine[] {
  return output
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as LogLine);
}

/** The messages of those lines, in order. */
export function logMessages(output: string): string[] {
  return logLines(output).map((line) => line.msg);
}
