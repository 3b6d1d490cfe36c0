import { postgresScheduleShard } from './schedule-suites.js';

postgresScheduleShard(2, 2, 500, import.meta.filename);
