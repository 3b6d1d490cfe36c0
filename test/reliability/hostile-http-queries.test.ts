import { describeHttpQueries } from '../support/hostile/suites/http-queries.js';

describeHttpQueries('full', 'test/reliability/hostile-http-queries.test.ts');
