import { namedPointSuite } from './crash-suites.js';

namedPointSuite('sqlite', 4);
