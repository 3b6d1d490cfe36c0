import { randomCallSuite } from './crash-suites.js';

await randomCallSuite('postgres', 85, import.meta.filename);
