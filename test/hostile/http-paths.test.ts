import { describeHttpPaths } from '../support/hostile/suites/http-paths.js';

describeHttpPaths('quick', 'test/hostile/http-paths.test.ts');
