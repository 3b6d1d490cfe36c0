import { describeHttpQueries } from '../support/hostile/suites/http-queries.js';

describeHttpQueries('quick', 'test/hostile/http-queries.test.ts');
