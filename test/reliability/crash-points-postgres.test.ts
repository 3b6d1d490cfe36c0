import { namedPointSuite } from './crash-suites.js';

namedPointSuite('postgres', 4);
