import { randomCallSuite } from './crash-suites.js';

await randomCallSuite('sqlite', 85, import.meta.filename);
