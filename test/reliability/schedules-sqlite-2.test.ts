import { sqliteScheduleShard } from './schedule-suites.js';

sqliteScheduleShard(2, 2, 5_000, import.meta.filename);
