import { postgresScheduleShard } from './schedule-suites.js';

postgresScheduleShard(1, 2, 500, import.meta.filename);
