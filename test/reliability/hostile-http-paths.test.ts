import { describeHttpPaths } from '../support/hostile/suites/http-paths.js';

describeHttpPaths('full', 'test/reliability/hostile-http-paths.test.ts');
