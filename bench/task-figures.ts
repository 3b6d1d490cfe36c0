/** The task figures alone (`npx tsx bench/task-figures.ts`); `npm run bench` runs them with the rest. */
import { reportTasks } from './tasks.js';

const lines = await reportTasks((line = '') => console.log(line));
for (const line of lines) console.log(line);
