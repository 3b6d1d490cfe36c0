import { sqliteScheduleShard } from './schedule-suites.js';

sqliteScheduleShard(1, 2, 5_000, import.meta.filename);
