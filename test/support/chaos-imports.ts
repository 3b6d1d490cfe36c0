/** What the chaos harness takes from the package. */
export { AmqpLink, submitTask, type TaskEventEnvelope } from '../../src/index.js';
import { TERMINAL_TASK_STATES, type TaskState } from '../../machines/task.machine.js';

export const TERMINAL_STATES_LIST: TaskState[] = [...TERMINAL_TASK_STATES];
